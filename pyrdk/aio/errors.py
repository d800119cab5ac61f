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


__all__ = [name for name in dir() if name[0].isupper()]
