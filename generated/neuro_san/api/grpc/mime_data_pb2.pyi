from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class MimeData(_message.Message):
    __slots__ = ("mime_type", "mime_bytes")
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    MIME_BYTES_FIELD_NUMBER: _ClassVar[int]
    mime_type: str
    mime_bytes: bytes
    def __init__(self, mime_type: _Optional[str] = ..., mime_bytes: _Optional[bytes] = ...) -> None: ...
