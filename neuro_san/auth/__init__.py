"""Who the caller is, beyond API keys: OAuth 2.1 access tokens (:mod:`neuro_san.auth.oauth`).

Below the service (which validates every call's token) and the HTTP port (which publishes
the resource metadata and the Bearer challenge); it imports only the core.
"""
