"""``python -m pyrdk.testing [--port 9092] [--no-zookeeper]``: run the development cluster
(``DevCluster``: a Tansu broker, and ZooKeeper when Java is there) until Ctrl-C or SIGTERM,
printing the addresses to give ``KafkaClient``."""
import argparse
import signal
import socket
import sys
import time

from pyrdk.testing import DevCluster


def _stop(*_):
    """SIGTERM as Ctrl-C; a second one (and a second Ctrl-C) may not cut the servers' stop short."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m pyrdk.testing",
                                     description="Run a development Kafka cluster until Ctrl-C.")
    parser.add_argument("--port", type=int, default=None,
                        help="the broker's port (default: a free one; 9092 is the README's)")
    parser.add_argument("--no-zookeeper", action="store_true",
                        help="no ZooKeeper (the balanced consumer's default needs one; managed=True does not)")
    args = parser.parse_args(argv)
    if args.port is not None:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", args.port)) == 0:
                print("error: port %d is taken (does a broker run there already?)" % args.port, file=sys.stderr)
                return 1
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        with DevCluster(zookeeper=False if args.no_zookeeper else None, port=args.port) as cluster:
            print("hosts=%s" % cluster.hosts, flush=True)
            if cluster.zookeeper_hosts:
                print("zookeeper_hosts=%s" % cluster.zookeeper_hosts, flush=True)
            print("running; Ctrl-C stops it", flush=True)
            while cluster.broker.process.poll() is None:
                time.sleep(1)
            print("error: the broker exited (its log: %s)" % cluster.broker.log_path, file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        pass
    except RuntimeError as exc:  # no Tansu binary, a server that did not start
        print("error: %s" % exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
