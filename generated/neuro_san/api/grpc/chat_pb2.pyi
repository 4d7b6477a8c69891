from google.protobuf import struct_pb2 as _struct_pb2
from neuro_san.api.grpc import mime_data_pb2 as _mime_data_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Origin(_message.Message):
    __slots__ = ("tool", "instantiation_index")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    INSTANTIATION_INDEX_FIELD_NUMBER: _ClassVar[int]
    tool: str
    instantiation_index: int
    def __init__(self, tool: _Optional[str] = ..., instantiation_index: _Optional[int] = ...) -> None: ...

class ChatMessage(_message.Message):
    __slots__ = ("type", "text", "mime_data", "origin", "structure", "chat_context", "tool_result_origin", "sly_data", "delta_kind")
    class ChatMessageType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[ChatMessage.ChatMessageType]
        SYSTEM: _ClassVar[ChatMessage.ChatMessageType]
        HUMAN: _ClassVar[ChatMessage.ChatMessageType]
        AI: _ClassVar[ChatMessage.ChatMessageType]
        AGENT: _ClassVar[ChatMessage.ChatMessageType]
        AGENT_FRAMEWORK: _ClassVar[ChatMessage.ChatMessageType]
        AGENT_TOOL_RESULT: _ClassVar[ChatMessage.ChatMessageType]
        AGENT_PROGRESS: _ClassVar[ChatMessage.ChatMessageType]
        TOKEN_DELTA: _ClassVar[ChatMessage.ChatMessageType]
    UNKNOWN: ChatMessage.ChatMessageType
    SYSTEM: ChatMessage.ChatMessageType
    HUMAN: ChatMessage.ChatMessageType
    AI: ChatMessage.ChatMessageType
    AGENT: ChatMessage.ChatMessageType
    AGENT_FRAMEWORK: ChatMessage.ChatMessageType
    AGENT_TOOL_RESULT: ChatMessage.ChatMessageType
    AGENT_PROGRESS: ChatMessage.ChatMessageType
    TOKEN_DELTA: ChatMessage.ChatMessageType
    class DeltaKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        ANSWER: _ClassVar[ChatMessage.DeltaKind]
        REASONING: _ClassVar[ChatMessage.DeltaKind]
    ANSWER: ChatMessage.DeltaKind
    REASONING: ChatMessage.DeltaKind
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    MIME_DATA_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    STRUCTURE_FIELD_NUMBER: _ClassVar[int]
    CHAT_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULT_ORIGIN_FIELD_NUMBER: _ClassVar[int]
    SLY_DATA_FIELD_NUMBER: _ClassVar[int]
    DELTA_KIND_FIELD_NUMBER: _ClassVar[int]
    type: ChatMessage.ChatMessageType
    text: str
    mime_data: _containers.RepeatedCompositeFieldContainer[_mime_data_pb2.MimeData]
    origin: _containers.RepeatedCompositeFieldContainer[Origin]
    structure: _struct_pb2.Struct
    chat_context: ChatContext
    tool_result_origin: _containers.RepeatedCompositeFieldContainer[Origin]
    sly_data: _struct_pb2.Struct
    delta_kind: ChatMessage.DeltaKind
    def __init__(self, type: _Optional[_Union[ChatMessage.ChatMessageType, str]] = ..., text: _Optional[str] = ..., mime_data: _Optional[_Iterable[_Union[_mime_data_pb2.MimeData, _Mapping]]] = ..., origin: _Optional[_Iterable[_Union[Origin, _Mapping]]] = ..., structure: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., chat_context: _Optional[_Union[ChatContext, _Mapping]] = ..., tool_result_origin: _Optional[_Iterable[_Union[Origin, _Mapping]]] = ..., sly_data: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., delta_kind: _Optional[_Union[ChatMessage.DeltaKind, str]] = ...) -> None: ...

class ChatHistory(_message.Message):
    __slots__ = ("origin", "messages")
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    origin: _containers.RepeatedCompositeFieldContainer[Origin]
    messages: _containers.RepeatedCompositeFieldContainer[ChatMessage]
    def __init__(self, origin: _Optional[_Iterable[_Union[Origin, _Mapping]]] = ..., messages: _Optional[_Iterable[_Union[ChatMessage, _Mapping]]] = ...) -> None: ...

class ChatContext(_message.Message):
    __slots__ = ("chat_histories",)
    CHAT_HISTORIES_FIELD_NUMBER: _ClassVar[int]
    chat_histories: _containers.RepeatedCompositeFieldContainer[ChatHistory]
    def __init__(self, chat_histories: _Optional[_Iterable[_Union[ChatHistory, _Mapping]]] = ...) -> None: ...
