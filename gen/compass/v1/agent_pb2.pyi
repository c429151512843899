from gen.compass.v1 import comms_pb2 as _comms_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AppendMessageRequest(_message.Message):
    __slots__ = ("channel_id", "frame")
    CHANNEL_ID_FIELD_NUMBER: _ClassVar[int]
    FRAME_FIELD_NUMBER: _ClassVar[int]
    channel_id: str
    frame: _comms_pb2.MessageUpdated
    def __init__(self, channel_id: _Optional[str] = ..., frame: _Optional[_Union[_comms_pb2.MessageUpdated, _Mapping]] = ...) -> None: ...

class AppendMessageResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: _comms_pb2.Message
    def __init__(self, message: _Optional[_Union[_comms_pb2.Message, _Mapping]] = ...) -> None: ...

class UpdateMessageRequest(_message.Message):
    __slots__ = ("frame",)
    FRAME_FIELD_NUMBER: _ClassVar[int]
    frame: _comms_pb2.MessageUpdated
    def __init__(self, frame: _Optional[_Union[_comms_pb2.MessageUpdated, _Mapping]] = ...) -> None: ...

class UpdateMessageResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: _comms_pb2.Message
    def __init__(self, message: _Optional[_Union[_comms_pb2.Message, _Mapping]] = ...) -> None: ...

class WatchAskRequest(_message.Message):
    __slots__ = ("ask_id",)
    ASK_ID_FIELD_NUMBER: _ClassVar[int]
    ask_id: str
    def __init__(self, ask_id: _Optional[str] = ...) -> None: ...

class WatchAskResponse(_message.Message):
    __slots__ = ("ask", "keepalive")
    ASK_FIELD_NUMBER: _ClassVar[int]
    KEEPALIVE_FIELD_NUMBER: _ClassVar[int]
    ask: _comms_pb2.Ask
    keepalive: bool
    def __init__(self, ask: _Optional[_Union[_comms_pb2.Ask, _Mapping]] = ..., keepalive: _Optional[bool] = ...) -> None: ...

class CloseAskRequest(_message.Message):
    __slots__ = ("ask_id", "status", "reason", "answers")
    ASK_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ANSWERS_FIELD_NUMBER: _ClassVar[int]
    ask_id: str
    status: _comms_pb2.AskStatus
    reason: str
    answers: _containers.RepeatedCompositeFieldContainer[_comms_pb2.AskQuestionAnswer]
    def __init__(self, ask_id: _Optional[str] = ..., status: _Optional[_Union[_comms_pb2.AskStatus, str]] = ..., reason: _Optional[str] = ..., answers: _Optional[_Iterable[_Union[_comms_pb2.AskQuestionAnswer, _Mapping]]] = ...) -> None: ...

class CloseAskResponse(_message.Message):
    __slots__ = ("ask",)
    ASK_FIELD_NUMBER: _ClassVar[int]
    ask: _comms_pb2.Ask
    def __init__(self, ask: _Optional[_Union[_comms_pb2.Ask, _Mapping]] = ...) -> None: ...

class ReportDeliveryRequest(_message.Message):
    __slots__ = ("ask_id", "state", "detail", "payload")
    ASK_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    ask_id: str
    state: _comms_pb2.DeliveryState
    detail: str
    payload: str
    def __init__(self, ask_id: _Optional[str] = ..., state: _Optional[_Union[_comms_pb2.DeliveryState, str]] = ..., detail: _Optional[str] = ..., payload: _Optional[str] = ...) -> None: ...

class ReportDeliveryResponse(_message.Message):
    __slots__ = ("ask",)
    ASK_FIELD_NUMBER: _ClassVar[int]
    ask: _comms_pb2.Ask
    def __init__(self, ask: _Optional[_Union[_comms_pb2.Ask, _Mapping]] = ...) -> None: ...

class GetChannelRequest(_message.Message):
    __slots__ = ("channel_id",)
    CHANNEL_ID_FIELD_NUMBER: _ClassVar[int]
    channel_id: str
    def __init__(self, channel_id: _Optional[str] = ...) -> None: ...

class GetChannelResponse(_message.Message):
    __slots__ = ("channel",)
    CHANNEL_FIELD_NUMBER: _ClassVar[int]
    channel: _comms_pb2.Channel
    def __init__(self, channel: _Optional[_Union[_comms_pb2.Channel, _Mapping]] = ...) -> None: ...
