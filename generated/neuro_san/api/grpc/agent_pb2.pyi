from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from neuro_san.api.grpc import chat_pb2 as _chat_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ChatFilterType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNKNOWN: _ClassVar[ChatFilterType]
    MINIMAL: _ClassVar[ChatFilterType]
    MAXIMAL: _ClassVar[ChatFilterType]
UNKNOWN: ChatFilterType
MINIMAL: ChatFilterType
MAXIMAL: ChatFilterType

class FunctionRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Function(_message.Message):
    __slots__ = ("description", "parameters", "sly_data_schema", "sly_data_output_schema")
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    SLY_DATA_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    SLY_DATA_OUTPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    description: str
    parameters: _struct_pb2.Struct
    sly_data_schema: _struct_pb2.Struct
    sly_data_output_schema: _struct_pb2.Struct
    def __init__(self, description: _Optional[str] = ..., parameters: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., sly_data_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., sly_data_output_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class FunctionResponse(_message.Message):
    __slots__ = ("function",)
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    function: Function
    def __init__(self, function: _Optional[_Union[Function, _Mapping]] = ...) -> None: ...

class ChatFilter(_message.Message):
    __slots__ = ("chat_filter_type",)
    CHAT_FILTER_TYPE_FIELD_NUMBER: _ClassVar[int]
    chat_filter_type: ChatFilterType
    def __init__(self, chat_filter_type: _Optional[_Union[ChatFilterType, str]] = ...) -> None: ...

class ChatRequest(_message.Message):
    __slots__ = ("sly_data", "user_message", "chat_context", "chat_filter", "stream_tokens")
    SLY_DATA_FIELD_NUMBER: _ClassVar[int]
    USER_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CHAT_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    CHAT_FILTER_FIELD_NUMBER: _ClassVar[int]
    STREAM_TOKENS_FIELD_NUMBER: _ClassVar[int]
    sly_data: _struct_pb2.Struct
    user_message: _chat_pb2.ChatMessage
    chat_context: _chat_pb2.ChatContext
    chat_filter: ChatFilter
    stream_tokens: bool
    def __init__(self, sly_data: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., user_message: _Optional[_Union[_chat_pb2.ChatMessage, _Mapping]] = ..., chat_context: _Optional[_Union[_chat_pb2.ChatContext, _Mapping]] = ..., chat_filter: _Optional[_Union[ChatFilter, _Mapping]] = ..., stream_tokens: _Optional[bool] = ...) -> None: ...

class ChatResponse(_message.Message):
    __slots__ = ("request", "response")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    request: ChatRequest
    response: _chat_pb2.ChatMessage
    def __init__(self, request: _Optional[_Union[ChatRequest, _Mapping]] = ..., response: _Optional[_Union[_chat_pb2.ChatMessage, _Mapping]] = ...) -> None: ...

class ConnectivityRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ConnectivityInfo(_message.Message):
    __slots__ = ("origin", "tools", "display_as", "metadata")
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_AS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    origin: str
    tools: _containers.RepeatedScalarFieldContainer[str]
    display_as: str
    metadata: _struct_pb2.Struct
    def __init__(self, origin: _Optional[str] = ..., tools: _Optional[_Iterable[str]] = ..., display_as: _Optional[str] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ConnectivityResponse(_message.Message):
    __slots__ = ("connectivity_info", "metadata")
    CONNECTIVITY_INFO_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    connectivity_info: _containers.RepeatedCompositeFieldContainer[ConnectivityInfo]
    metadata: _struct_pb2.Struct
    def __init__(self, connectivity_info: _Optional[_Iterable[_Union[ConnectivityInfo, _Mapping]]] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...
