"""neuro-san-grpc: a gRPC-first server for neuro-san agent networks.

Layers, inner to outer (imports only ever point inwards):

- ``neuro_san.api`` — generated protobuf/gRPC modules (``make protos``).
- ``neuro_san.core`` — transport-free types: messages, errors, the host interface.
- ``neuro_san.network`` — agent networks read from HOCON/YAML/JSON files.
- ``neuro_san.llm`` — the LLM model interface and its adapters.
- ``neuro_san.runtime`` — runs a chat turn over a network.
- ``neuro_san.service`` — the grpc.aio server (thin servicers over the host).
- ``gateway`` (top-level package) — HTTP/JSON transcoding from the protos' rules.
"""

__version__ = "0.1.0"
