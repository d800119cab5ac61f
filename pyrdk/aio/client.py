"""What the asyncio producer and consumer share: ``async with``, and the one way the control
path reaches librdkafka's blocking calls."""


class Client:
    """``async with client:`` starts and stops it; subclasses set ``_loop`` in ``start()``."""

    async def __aenter__(self):
        await self.start()
        return self

    async def __aexit__(self, *exc_info):
        await self.stop()

    async def _blocking(self, fn, *args):
        """Run one of librdkafka's blocking control calls (metadata, commits, offset lookups,
        transactions, close) on the loop's default executor; the data path never does."""
        return await self._loop.run_in_executor(None, fn, *args)
