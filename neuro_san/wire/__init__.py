"""The wire form of the core's types: protobuf messages (``neuro_san.api.grpc``) to and
from :mod:`neuro_san.core.messages`.

It sits between the core and its two users, the gRPC service and the client library,
which both convert through it and import nothing of each other.
"""
