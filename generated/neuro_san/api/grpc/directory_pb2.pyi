from neuro_san.api.grpc import agent_pb2 as _agent_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DirectoryRequest(_message.Message):
    __slots__ = ("public_directory",)
    PUBLIC_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    public_directory: bool
    def __init__(self, public_directory: _Optional[bool] = ...) -> None: ...

class DirectoryEntry(_message.Message):
    __slots__ = ("agent_name", "description", "tags", "mcp_tool", "function")
    AGENT_NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    MCP_TOOL_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    agent_name: str
    description: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    mcp_tool: str
    function: _agent_pb2.Function
    def __init__(self, agent_name: _Optional[str] = ..., description: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., mcp_tool: _Optional[str] = ..., function: _Optional[_Union[_agent_pb2.Function, _Mapping]] = ...) -> None: ...

class DirectoryResponse(_message.Message):
    __slots__ = ("version", "entries")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    version: str
    entries: _containers.RepeatedCompositeFieldContainer[DirectoryEntry]
    def __init__(self, version: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[DirectoryEntry, _Mapping]]] = ...) -> None: ...
