"""aiokafka's ``ConsumerRebalanceListener`` (``aiokafka.abc``)."""
import abc


class ConsumerRebalanceListener(abc.ABC):
    """Told of each rebalance of a subscribed consumer's group: ``on_partitions_revoked``
    before the consumer gives its partitions up (commit their offsets there), then
    ``on_partitions_assigned`` once it holds its new ones (seek there). Either may be a
    coroutine function; the consumer awaits it before it returns records again."""

    @abc.abstractmethod
    def on_partitions_revoked(self, revoked):
        """``revoked``: the set of :class:`TopicPartition` given up."""

    @abc.abstractmethod
    def on_partitions_assigned(self, assigned):
        """``assigned``: the set of :class:`TopicPartition` now held."""


__all__ = ["ConsumerRebalanceListener"]
