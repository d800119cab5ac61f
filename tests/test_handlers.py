"""pyrdk.handlers: pykafka's ThreadingHandler, the toolkit behind ``cluster.handler``."""
import threading

import pytest

from pyrdk import handlers
from pyrdk.handlers import Handler, ThreadingHandler


def test_threading_handler_gives_threading_primitives():
    handler = ThreadingHandler()
    assert isinstance(handler.Event(), threading.Event)
    lock = handler.Lock()
    with lock:
        assert not lock.acquire(blocking=False)
    rlock = handler.RLock()
    with rlock, rlock:
        pass
    semaphore = handler.Semaphore(1)
    assert semaphore.acquire(blocking=False) and not semaphore.acquire(blocking=False)
    queue = handler.Queue()
    queue.put(1)
    assert queue.get_nowait() == 1
    with pytest.raises(handler.QueueEmptyError):
        queue.get_nowait()
    handler.sleep(0)
    handler.sleep()


def test_spawn_starts_a_named_daemon_thread():
    handler = ThreadingHandler()
    results = handler.Queue()
    thread = handler.spawn(lambda a, b=0: results.put(a + b), 1, name="adder")
    thread.join(10)
    assert results.get_nowait() == 1
    assert thread.daemon and thread.name.endswith(": adder")
    thread = handler.spawn(results.put, kwargs={"item": "as pykafka"}, name="putter")
    thread.join(10)
    assert results.get_nowait() == "as pykafka"
    with pytest.raises(TypeError, match="positionally or as args=, not both"):
        handler.spawn(results.put, 1, args=(2,))


def test_base_handler_and_what_pyrdk_has_not():
    with pytest.raises(NotImplementedError):
        Handler().spawn(print)
    for name in ("GEventHandler", "RequestHandler", "ResponseFuture"):
        with pytest.raises(AttributeError, match="pyrdk.handlers has no %s: " % name):
            getattr(handlers, name)


@pytest.mark.kafka
def test_the_cluster_handler_unblocks_a_consume(client, topic):
    handler = client.cluster.handler
    assert isinstance(handler, ThreadingHandler) and client._handler is handler
    consumer = topic.get_simple_consumer()  # consumer_timeout_ms=-1: waits for ever
    try:
        unblock = handler.Event()
        handler.spawn(lambda: (handler.sleep(0.2), unblock.set()))
        assert consumer.consume(unblock_event=unblock) is None
    finally:
        consumer.stop()
