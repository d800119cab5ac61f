"""aiokafka's ``ConsumerRebalanceListener`` and ``AbstractTokenProvider`` (``aiokafka.abc``)."""
from __future__ import annotations

import abc
from collections.abc import Awaitable
from typing import Any, Optional

from pyrdk.aio.structs import TopicPartition


class ConsumerRebalanceListener(abc.ABC):
    """Told of each rebalance of a subscribed consumer's group: ``on_partitions_revoked``
    before the consumer gives its partitions up (commit their offsets there), then
    ``on_partitions_assigned`` with its new ones (seek there: the seeks are where
    librdkafka's assignment starts). Either may be a
    coroutine function; the consumer awaits it before it returns records again."""

    @abc.abstractmethod
    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Optional[Awaitable[None]]:
        """``revoked``: the set of :class:`TopicPartition` given up."""

    @abc.abstractmethod
    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Optional[Awaitable[None]]:
        """``assigned``: the set of :class:`TopicPartition` now held."""


class AbstractTokenProvider(abc.ABC):
    """aiokafka's base of OAUTHBEARER token providers (``sasl_oauth_token_provider``): when
    librdkafka asks for a token, the client awaits ``token()`` in its event loop and sends
    ``extensions()`` with it (see :class:`pyrdk.aio.conf.TokenCallback`)."""

    def __init__(self, **config: Any) -> None:
        self.config = config

    @abc.abstractmethod
    async def token(self) -> str:
        """The token (a str)."""

    def extensions(self) -> dict[str, str]:
        """SASL extensions to send with the token: a dict of str."""
        return {}


__all__ = ["AbstractTokenProvider", "ConsumerRebalanceListener"]
