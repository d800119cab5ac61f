"""aiokafka's exception names (``aiokafka.errors``), mapped onto pyrdk's exceptions: an
``except aiokafka.errors.X`` in a program catches what pyrdk raises for the same failure."""
from pyrdk import exceptions as _e

KafkaError = _e.KafkaException
KafkaTimeoutError = _e.KafkaTimeoutError
KafkaConnectionError = _e.SocketDisconnectedError
NoBrokersAvailable = _e.NoBrokersAvailableError
ConsumerStoppedError = _e.ConsumerStoppedException
ProducerClosed = _e.ProducerStoppedException
OffsetOutOfRangeError = _e.OffsetOutOfRangeError
UnknownTopicOrPartitionError = _e.UnknownTopicOrPartition
MessageSizeTooLargeError = _e.MessageSizeTooLarge
RecordTooLargeError = _e.MessageSizeTooLarge
RequestTimedOutError = _e.RequestTimedOut
NotLeaderForPartitionError = _e.NotLeaderForPartition
LeaderNotAvailableError = _e.LeaderNotAvailable
RebalanceInProgressError = _e.RebalanceInProgress
IllegalGenerationError = _e.IllegalGeneration
UnknownMemberIdError = _e.UnknownMemberId
GroupCoordinatorNotAvailableError = _e.GroupCoordinatorNotAvailable
NotCoordinatorForGroupError = _e.NotCoordinatorForGroup
TopicAuthorizationFailedError = _e.TopicAuthorizationFailed
GroupAuthorizationFailedError = _e.GroupAuthorizationFailed
CorruptRecordException = _e.InvalidMessageError
InvalidMessageError = _e.InvalidMessageError
ProducerFenced = _e.ProducerFenced
InvalidProducerEpoch = _e.InvalidProducerEpoch
InvalidTxnStateError = _e.InvalidTxnState
ConcurrentTransactions = _e.ConcurrentTransactions
TransactionalIdAuthorizationFailed = _e.TransactionalIdAuthorizationFailed
UnsupportedVersionError = _e.NotSupportedError
KafkaConfigurationError = _e.ConfigurationError
CoordinatorLoadInProgressError = GroupLoadInProgressError = _e.GroupLoadInProgress
CoordinatorNotAvailableError = _e.GroupCoordinatorNotAvailable
NotCoordinatorError = _e.NotCoordinatorForGroup
NonEmptyGroup = _e.NonEmptyGroupError
GroupIdNotFound = _e.GroupIdNotFoundError
SaslAuthenticationFailed = _e.SaslAuthenticationFailed
InvalidTxnState = _e.InvalidTxnState
TransactionCoordinatorFenced = _e.TransactionCoordinatorFenced
TransactionIdAuthorizationFailed = _e.TransactionalIdAuthorizationFailed
BrokerResponseError = _e.ProtocolClientError
UnknownError = _e.UnknownError
NoOffsetForPartitionError = _e.OffsetOutOfRangeError  # auto_offset_reset="none" raises it
InvalidFetchRequestError = _e.InvalidMessageSize
BrokerNotAvailableError = _e.BrokerNotAvailable
ReplicaNotAvailableError = _e.ReplicaNotAvailable
StaleControllerEpochError = _e.StaleControllerEpoch
OffsetMetadataTooLargeError = _e.OffsetMetadataTooLarge
InvalidTopicError = _e.InvalidTopic
RecordListTooLargeError = _e.RecordListTooLarge
NotEnoughReplicasError = _e.NotEnoughReplicas
NotEnoughReplicasAfterAppendError = _e.NotEnoughReplicasAfterAppend
InvalidRequiredAcksError = _e.InvalidRequiredAcks
InconsistentGroupProtocolError = _e.InconsistentGroupProtocol
InvalidGroupIdError = _e.InvalidGroupId
InvalidSessionTimeoutError = _e.InvalidSessionTimeout
InvalidCommitOffsetSizeError = _e.InvalidCommitOffsetSize
ClusterAuthorizationFailedError = _e.ClusterAuthorizationFailed
InvalidTimestampError = _e.InvalidTimestamp
UnsupportedSaslMechanismError = _e.UnsupportedSaslMechanism
IllegalSaslStateError = _e.IllegalSaslState
TopicAlreadyExistsError = _e.TopicAlreadyExists
InvalidPartitionsError = _e.InvalidPartitions
InvalidReplicationFactorError = _e.InvalidReplicationFactor
InvalidReplicationAssignmentError = _e.InvalidReplicaAssignment
InvalidConfigurationError = _e.InvalidConfig
NotControllerError = _e.NotController
InvalidRequestError = _e.InvalidRequest
UnsupportedForMessageFormatError = _e.UnsupportedForMessageFormat
PolicyViolationError = _e.PolicyViolation
AuthenticationFailedError = _e.AuthenticationError
KafkaUnavailableError = _e.NoBrokersAvailableError
IllegalArgumentError = _e.ConfigurationError  # a ValueError too
NodeNotReadyError = KafkaProtocolError = CorrelationIdError = _e.SocketDisconnectedError
MetadataEmptyBrokerList = _e.NoBrokersAvailableError
OutOfOrderSequenceNumber = _e.OutOfOrderSequenceNumber
DuplicateSequenceNumber = _e.DuplicateSequenceNumber
InvalidProducerIdMapping = _e.InvalidProducerIdMapping
InvalidTransactionTimeout = _e.InvalidTransactionTimeout
SecurityDisabled = _e.SecurityDisabled
OperationNotAttempted = _e.OperationNotAttempted
KafkaStorageError = _e.KafkaStorageError
LogDirNotFound = _e.LogDirNotFound
UnknownProducerId = _e.UnknownProducerId
ReassignmentInProgress = _e.ReassignmentInProgress
DelegationTokenAuthDisabled = _e.DelegationTokenAuthDisabled
DelegationTokenNotFound = _e.DelegationTokenNotFound
DelegationTokenOwnerMismatch = _e.DelegationTokenOwnerMismatch
DelegationTokenRequestNotAllowed = _e.DelegationTokenRequestNotAllowed
DelegationTokenAuthorizationFailed = _e.DelegationTokenAuthorizationFailed
DelegationTokenExpired = _e.DelegationTokenExpired
InvalidPrincipalType = _e.InvalidPrincipalType
FetchSessionIdNotFound = _e.FetchSessionIdNotFound
InvalidFetchSessionEpoch = _e.InvalidFetchSessionEpoch
ListenerNotFound = _e.ListenerNotFound
MemberIdRequired = _e.MemberIdRequired


class IllegalStateError(_e.KafkaException):
    """The call does not fit the consumer's state: a partition not assigned, ``assign()``
    after ``subscribe()``..."""


IllegalStateException = IllegalStateError


class IllegalOperation(_e.KafkaException):
    """The operation needs what this client lacks (a ``group_id`` for commits)."""


class CommitFailedError(_e.KafkaException):
    """The group rebalanced (or this member left it) before the commit: the partitions may
    belong to another member now."""


class UnrecognizedBrokerVersion(_e.KafkaException):
    """aiokafka's name; librdkafka negotiates versions, so pyrdk never raises it."""


class IncompatibleBrokerVersion(_e.KafkaException):
    """aiokafka's name; librdkafka negotiates versions, so pyrdk never raises it."""


class AuthenticationMethodNotSupported(_e.KafkaException):
    """aiokafka's name; pyrdk raises ``UnsupportedSaslMechanismError`` or ``KafkaConfigurationError``."""


class UnsupportedCodecError(_e.KafkaException):
    """aiokafka's name; librdkafka decompresses every codec it was built with."""


class Cancelled(_e.KafkaException):
    """aiokafka's name for an internal request cancelled; pyrdk never raises it."""


class TooManyInFlightRequests(_e.KafkaException):
    """aiokafka's name; librdkafka bounds its in-flight requests itself."""


class StaleMetadata(_e.KafkaException):
    """aiokafka's name; librdkafka refreshes its metadata itself."""


class StaleLeaderEpochCodeError(_e.KafkaException):
    """aiokafka's name; pyrdk never raises it."""


class QuotaViolationError(_e.KafkaException):
    """aiokafka's name; librdkafka waits out a broker's throttling."""


class NoError(_e.KafkaException):
    """aiokafka's class of error code 0, which is no error: pyrdk never raises it."""


def for_code(code: int) -> type[_e.KafkaException]:
    """The exception class pyrdk raises for Kafka (or librdkafka) error ``code``."""
    return _e.for_code(code)


kafka_errors = dict(_e.ERROR_CODES)  # Kafka's error code -> the exception class, as aiokafka's

__all__ = [name for name in dir() if name[0].isupper()] + ["for_code", "kafka_errors"]
