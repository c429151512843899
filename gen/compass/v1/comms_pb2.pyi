import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AskStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ASK_STATUS_UNSPECIFIED: _ClassVar[AskStatus]
    ASK_STATUS_PENDING: _ClassVar[AskStatus]
    ASK_STATUS_ANSWERED: _ClassVar[AskStatus]
    ASK_STATUS_DECLINED: _ClassVar[AskStatus]
    ASK_STATUS_WITHDRAWN: _ClassVar[AskStatus]
    ASK_STATUS_TIMED_OUT: _ClassVar[AskStatus]
    ASK_STATUS_EXPIRED: _ClassVar[AskStatus]

class AskTimeoutPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ASK_TIMEOUT_POLICY_UNSPECIFIED: _ClassVar[AskTimeoutPolicy]
    ASK_TIMEOUT_POLICY_PICK_RECOMMENDED: _ClassVar[AskTimeoutPolicy]
    ASK_TIMEOUT_POLICY_FAIL: _ClassVar[AskTimeoutPolicy]

class FreeText(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FREE_TEXT_UNSPECIFIED: _ClassVar[FreeText]
    FREE_TEXT_ACCEPTED: _ClassVar[FreeText]
    FREE_TEXT_REFUSED: _ClassVar[FreeText]
    FREE_TEXT_INSTEAD_OF_PICKS: _ClassVar[FreeText]

class DeliveryState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DELIVERY_STATE_UNSPECIFIED: _ClassVar[DeliveryState]
    DELIVERY_STATE_DELIVERED: _ClassVar[DeliveryState]
    DELIVERY_STATE_DELIVERED_WITH_CHANGES: _ClassVar[DeliveryState]
    DELIVERY_STATE_NOT_DELIVERED: _ClassVar[DeliveryState]

class AccountKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACCOUNT_KIND_UNSPECIFIED: _ClassVar[AccountKind]
    ACCOUNT_KIND_HUMAN: _ClassVar[AccountKind]
    ACCOUNT_KIND_AGENT: _ClassVar[AccountKind]
ASK_STATUS_UNSPECIFIED: AskStatus
ASK_STATUS_PENDING: AskStatus
ASK_STATUS_ANSWERED: AskStatus
ASK_STATUS_DECLINED: AskStatus
ASK_STATUS_WITHDRAWN: AskStatus
ASK_STATUS_TIMED_OUT: AskStatus
ASK_STATUS_EXPIRED: AskStatus
ASK_TIMEOUT_POLICY_UNSPECIFIED: AskTimeoutPolicy
ASK_TIMEOUT_POLICY_PICK_RECOMMENDED: AskTimeoutPolicy
ASK_TIMEOUT_POLICY_FAIL: AskTimeoutPolicy
FREE_TEXT_UNSPECIFIED: FreeText
FREE_TEXT_ACCEPTED: FreeText
FREE_TEXT_REFUSED: FreeText
FREE_TEXT_INSTEAD_OF_PICKS: FreeText
DELIVERY_STATE_UNSPECIFIED: DeliveryState
DELIVERY_STATE_DELIVERED: DeliveryState
DELIVERY_STATE_DELIVERED_WITH_CHANGES: DeliveryState
DELIVERY_STATE_NOT_DELIVERED: DeliveryState
ACCOUNT_KIND_UNSPECIFIED: AccountKind
ACCOUNT_KIND_HUMAN: AccountKind
ACCOUNT_KIND_AGENT: AccountKind

class MessageBlock(_message.Message):
    __slots__ = ("text", "ask")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ASK_FIELD_NUMBER: _ClassVar[int]
    text: TextBlock
    ask: Ask
    def __init__(self, text: _Optional[_Union[TextBlock, _Mapping]] = ..., ask: _Optional[_Union[Ask, _Mapping]] = ...) -> None: ...

class TextBlock(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class Ask(_message.Message):
    __slots__ = ("ask_id", "questions", "answered_by_account_id", "answered_at", "answered_by_name", "status", "deadline", "on_timeout", "closed_by_account_id", "closed_at", "closed_by_name", "close_reason", "delivery", "withdraw_at")
    ASK_ID_FIELD_NUMBER: _ClassVar[int]
    QUESTIONS_FIELD_NUMBER: _ClassVar[int]
    ANSWERED_BY_ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    ANSWERED_AT_FIELD_NUMBER: _ClassVar[int]
    ANSWERED_BY_NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    ON_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    CLOSED_BY_ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    CLOSED_AT_FIELD_NUMBER: _ClassVar[int]
    CLOSED_BY_NAME_FIELD_NUMBER: _ClassVar[int]
    CLOSE_REASON_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_FIELD_NUMBER: _ClassVar[int]
    WITHDRAW_AT_FIELD_NUMBER: _ClassVar[int]
    ask_id: str
    questions: _containers.RepeatedCompositeFieldContainer[AskQuestion]
    answered_by_account_id: str
    answered_at: _timestamp_pb2.Timestamp
    answered_by_name: str
    status: AskStatus
    deadline: _timestamp_pb2.Timestamp
    on_timeout: AskTimeoutPolicy
    closed_by_account_id: str
    closed_at: _timestamp_pb2.Timestamp
    closed_by_name: str
    close_reason: str
    delivery: AskDelivery
    withdraw_at: _timestamp_pb2.Timestamp
    def __init__(self, ask_id: _Optional[str] = ..., questions: _Optional[_Iterable[_Union[AskQuestion, _Mapping]]] = ..., answered_by_account_id: _Optional[str] = ..., answered_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., answered_by_name: _Optional[str] = ..., status: _Optional[_Union[AskStatus, str]] = ..., deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., on_timeout: _Optional[_Union[AskTimeoutPolicy, str]] = ..., closed_by_account_id: _Optional[str] = ..., closed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., closed_by_name: _Optional[str] = ..., close_reason: _Optional[str] = ..., delivery: _Optional[_Union[AskDelivery, _Mapping]] = ..., withdraw_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class AskDelivery(_message.Message):
    __slots__ = ("state", "detail", "payload", "reported_by_account_id", "reported_by_name", "reported_at")
    STATE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    REPORTED_BY_ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    REPORTED_BY_NAME_FIELD_NUMBER: _ClassVar[int]
    REPORTED_AT_FIELD_NUMBER: _ClassVar[int]
    state: DeliveryState
    detail: str
    payload: str
    reported_by_account_id: str
    reported_by_name: str
    reported_at: _timestamp_pb2.Timestamp
    def __init__(self, state: _Optional[_Union[DeliveryState, str]] = ..., detail: _Optional[str] = ..., payload: _Optional[str] = ..., reported_by_account_id: _Optional[str] = ..., reported_by_name: _Optional[str] = ..., reported_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class AskQuestion(_message.Message):
    __slots__ = ("question_id", "question", "header", "options", "allow_multiple", "recommended", "chosen_option_ids", "custom_text", "timed_out", "free_text", "answer_required")
    QUESTION_ID_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_MULTIPLE_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDED_FIELD_NUMBER: _ClassVar[int]
    CHOSEN_OPTION_IDS_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_TEXT_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    FREE_TEXT_FIELD_NUMBER: _ClassVar[int]
    ANSWER_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    question_id: str
    question: str
    header: str
    options: _containers.RepeatedCompositeFieldContainer[AskOption]
    allow_multiple: bool
    recommended: int
    chosen_option_ids: _containers.RepeatedScalarFieldContainer[str]
    custom_text: str
    timed_out: bool
    free_text: FreeText
    answer_required: bool
    def __init__(self, question_id: _Optional[str] = ..., question: _Optional[str] = ..., header: _Optional[str] = ..., options: _Optional[_Iterable[_Union[AskOption, _Mapping]]] = ..., allow_multiple: _Optional[bool] = ..., recommended: _Optional[int] = ..., chosen_option_ids: _Optional[_Iterable[str]] = ..., custom_text: _Optional[str] = ..., timed_out: _Optional[bool] = ..., free_text: _Optional[_Union[FreeText, str]] = ..., answer_required: _Optional[bool] = ...) -> None: ...

class AskOption(_message.Message):
    __slots__ = ("id", "label", "description", "preview")
    ID_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PREVIEW_FIELD_NUMBER: _ClassVar[int]
    id: str
    label: str
    description: str
    preview: str
    def __init__(self, id: _Optional[str] = ..., label: _Optional[str] = ..., description: _Optional[str] = ..., preview: _Optional[str] = ...) -> None: ...

class MessageUpdated(_message.Message):
    __slots__ = ("message_id", "client_message_id", "blocks")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    message_id: str
    client_message_id: str
    blocks: _containers.RepeatedCompositeFieldContainer[MessageBlock]
    def __init__(self, message_id: _Optional[str] = ..., client_message_id: _Optional[str] = ..., blocks: _Optional[_Iterable[_Union[MessageBlock, _Mapping]]] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("message_id", "channel_id", "author_account_id", "client_message_id", "blocks", "created_at", "updated_at", "revision", "author_name", "author_kind")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_ID_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_NAME_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_KIND_FIELD_NUMBER: _ClassVar[int]
    message_id: str
    channel_id: str
    author_account_id: str
    client_message_id: str
    blocks: _containers.RepeatedCompositeFieldContainer[MessageBlock]
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    revision: int
    author_name: str
    author_kind: AccountKind
    def __init__(self, message_id: _Optional[str] = ..., channel_id: _Optional[str] = ..., author_account_id: _Optional[str] = ..., client_message_id: _Optional[str] = ..., blocks: _Optional[_Iterable[_Union[MessageBlock, _Mapping]]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., revision: _Optional[int] = ..., author_name: _Optional[str] = ..., author_kind: _Optional[_Union[AccountKind, str]] = ...) -> None: ...

class Workspace(_message.Message):
    __slots__ = ("workspace_id", "name")
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    workspace_id: str
    name: str
    def __init__(self, workspace_id: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class Channel(_message.Message):
    __slots__ = ("channel_id", "workspace_id", "name")
    CHANNEL_ID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    channel_id: str
    workspace_id: str
    name: str
    def __init__(self, channel_id: _Optional[str] = ..., workspace_id: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class ListChannelsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListChannelsResponse(_message.Message):
    __slots__ = ("channels",)
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    channels: _containers.RepeatedCompositeFieldContainer[Channel]
    def __init__(self, channels: _Optional[_Iterable[_Union[Channel, _Mapping]]] = ...) -> None: ...

class ListMessagesRequest(_message.Message):
    __slots__ = ("channel_id", "page_size", "page_token")
    CHANNEL_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    channel_id: str
    page_size: int
    page_token: str
    def __init__(self, channel_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListMessagesResponse(_message.Message):
    __slots__ = ("messages", "next_page_token")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[Message]
    next_page_token: str
    def __init__(self, messages: _Optional[_Iterable[_Union[Message, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetMeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetMeResponse(_message.Message):
    __slots__ = ("account_id", "kind", "name", "workspaces")
    ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    WORKSPACES_FIELD_NUMBER: _ClassVar[int]
    account_id: str
    kind: AccountKind
    name: str
    workspaces: _containers.RepeatedCompositeFieldContainer[Workspace]
    def __init__(self, account_id: _Optional[str] = ..., kind: _Optional[_Union[AccountKind, str]] = ..., name: _Optional[str] = ..., workspaces: _Optional[_Iterable[_Union[Workspace, _Mapping]]] = ...) -> None: ...

class ListPendingAsksRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class PendingAsk(_message.Message):
    __slots__ = ("ask", "message_id", "channel_id", "channel_name", "author_account_id", "author_name", "asked_at")
    ASK_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_ID_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_NAME_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_NAME_FIELD_NUMBER: _ClassVar[int]
    ASKED_AT_FIELD_NUMBER: _ClassVar[int]
    ask: Ask
    message_id: str
    channel_id: str
    channel_name: str
    author_account_id: str
    author_name: str
    asked_at: _timestamp_pb2.Timestamp
    def __init__(self, ask: _Optional[_Union[Ask, _Mapping]] = ..., message_id: _Optional[str] = ..., channel_id: _Optional[str] = ..., channel_name: _Optional[str] = ..., author_account_id: _Optional[str] = ..., author_name: _Optional[str] = ..., asked_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListPendingAsksResponse(_message.Message):
    __slots__ = ("asks", "next_page_token")
    ASKS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    asks: _containers.RepeatedCompositeFieldContainer[PendingAsk]
    next_page_token: str
    def __init__(self, asks: _Optional[_Iterable[_Union[PendingAsk, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetAskRequest(_message.Message):
    __slots__ = ("ask_id",)
    ASK_ID_FIELD_NUMBER: _ClassVar[int]
    ask_id: str
    def __init__(self, ask_id: _Optional[str] = ...) -> None: ...

class GetAskResponse(_message.Message):
    __slots__ = ("ask", "message_id", "channel_id")
    ASK_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_ID_FIELD_NUMBER: _ClassVar[int]
    ask: Ask
    message_id: str
    channel_id: str
    def __init__(self, ask: _Optional[_Union[Ask, _Mapping]] = ..., message_id: _Optional[str] = ..., channel_id: _Optional[str] = ...) -> None: ...

class WatchChannelRequest(_message.Message):
    __slots__ = ("channel_id", "after_revision")
    CHANNEL_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_REVISION_FIELD_NUMBER: _ClassVar[int]
    channel_id: str
    after_revision: int
    def __init__(self, channel_id: _Optional[str] = ..., after_revision: _Optional[int] = ...) -> None: ...

class WatchChannelResponse(_message.Message):
    __slots__ = ("message", "caught_up")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CAUGHT_UP_FIELD_NUMBER: _ClassVar[int]
    message: Message
    caught_up: bool
    def __init__(self, message: _Optional[_Union[Message, _Mapping]] = ..., caught_up: _Optional[bool] = ...) -> None: ...

class RespondToAskRequest(_message.Message):
    __slots__ = ("ask_id", "answers")
    ASK_ID_FIELD_NUMBER: _ClassVar[int]
    ANSWERS_FIELD_NUMBER: _ClassVar[int]
    ask_id: str
    answers: _containers.RepeatedCompositeFieldContainer[AskQuestionAnswer]
    def __init__(self, ask_id: _Optional[str] = ..., answers: _Optional[_Iterable[_Union[AskQuestionAnswer, _Mapping]]] = ...) -> None: ...

class AskQuestionAnswer(_message.Message):
    __slots__ = ("question_id", "chosen_option_ids", "custom_text")
    QUESTION_ID_FIELD_NUMBER: _ClassVar[int]
    CHOSEN_OPTION_IDS_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_TEXT_FIELD_NUMBER: _ClassVar[int]
    question_id: str
    chosen_option_ids: _containers.RepeatedScalarFieldContainer[str]
    custom_text: str
    def __init__(self, question_id: _Optional[str] = ..., chosen_option_ids: _Optional[_Iterable[str]] = ..., custom_text: _Optional[str] = ...) -> None: ...

class RespondToAskResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DeclineAskRequest(_message.Message):
    __slots__ = ("ask_id", "reason")
    ASK_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ask_id: str
    reason: str
    def __init__(self, ask_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class DeclineAskResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class InvalidFields(_message.Message):
    __slots__ = ("fields",)
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedCompositeFieldContainer[InvalidField]
    def __init__(self, fields: _Optional[_Iterable[_Union[InvalidField, _Mapping]]] = ...) -> None: ...

class InvalidField(_message.Message):
    __slots__ = ("field", "description", "question_id")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    QUESTION_ID_FIELD_NUMBER: _ClassVar[int]
    field: str
    description: str
    question_id: str
    def __init__(self, field: _Optional[str] = ..., description: _Optional[str] = ..., question_id: _Optional[str] = ...) -> None: ...

class GetPushConfigRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetPushConfigResponse(_message.Message):
    __slots__ = ("vapid_public_key",)
    VAPID_PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    vapid_public_key: str
    def __init__(self, vapid_public_key: _Optional[str] = ...) -> None: ...

class AddPushSubscriptionRequest(_message.Message):
    __slots__ = ("endpoint", "p256dh", "auth", "device_name")
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    P256DH_FIELD_NUMBER: _ClassVar[int]
    AUTH_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    endpoint: str
    p256dh: str
    auth: str
    device_name: str
    def __init__(self, endpoint: _Optional[str] = ..., p256dh: _Optional[str] = ..., auth: _Optional[str] = ..., device_name: _Optional[str] = ...) -> None: ...

class AddPushSubscriptionResponse(_message.Message):
    __slots__ = ("subscription_id",)
    SUBSCRIPTION_ID_FIELD_NUMBER: _ClassVar[int]
    subscription_id: str
    def __init__(self, subscription_id: _Optional[str] = ...) -> None: ...

class RemovePushSubscriptionRequest(_message.Message):
    __slots__ = ("subscription_id",)
    SUBSCRIPTION_ID_FIELD_NUMBER: _ClassVar[int]
    subscription_id: str
    def __init__(self, subscription_id: _Optional[str] = ...) -> None: ...

class RemovePushSubscriptionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListPushSubscriptionsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListPushSubscriptionsResponse(_message.Message):
    __slots__ = ("subscriptions",)
    SUBSCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    subscriptions: _containers.RepeatedCompositeFieldContainer[PushSubscription]
    def __init__(self, subscriptions: _Optional[_Iterable[_Union[PushSubscription, _Mapping]]] = ...) -> None: ...

class PushSubscription(_message.Message):
    __slots__ = ("subscription_id", "device_name", "created_at", "last_success_at", "last_error")
    SUBSCRIPTION_ID_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_SUCCESS_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    subscription_id: str
    device_name: str
    created_at: _timestamp_pb2.Timestamp
    last_success_at: _timestamp_pb2.Timestamp
    last_error: str
    def __init__(self, subscription_id: _Optional[str] = ..., device_name: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_success_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_error: _Optional[str] = ...) -> None: ...

class GetEmailSettingsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetEmailSettingsResponse(_message.Message):
    __slots__ = ("settings",)
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    settings: EmailSettings
    def __init__(self, settings: _Optional[_Union[EmailSettings, _Mapping]] = ...) -> None: ...

class SetEmailAsksRequest(_message.Message):
    __slots__ = ("on",)
    ON_FIELD_NUMBER: _ClassVar[int]
    on: bool
    def __init__(self, on: _Optional[bool] = ...) -> None: ...

class SetEmailAsksResponse(_message.Message):
    __slots__ = ("settings",)
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    settings: EmailSettings
    def __init__(self, settings: _Optional[_Union[EmailSettings, _Mapping]] = ...) -> None: ...

class EmailSettings(_message.Message):
    __slots__ = ("email", "email_asks", "server_sends")
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    EMAIL_ASKS_FIELD_NUMBER: _ClassVar[int]
    SERVER_SENDS_FIELD_NUMBER: _ClassVar[int]
    email: str
    email_asks: bool
    server_sends: bool
    def __init__(self, email: _Optional[str] = ..., email_asks: _Optional[bool] = ..., server_sends: _Optional[bool] = ...) -> None: ...
