"""What every command shares: the connection options and the client they make, errors as
one line (exit 1; click's usage errors exit 2), ``--json`` documents, tables (rich on a
terminal, aligned plain text otherwise) and parsing of offsets and datetimes."""
import datetime
import json
import logging
import os
import re
import shlex
import shutil
import signal
import sys
import threading
import warnings

import click

from pyrdk.client import KafkaClient
from pyrdk import exceptions
from pyrdk.exceptions import KafkaException

DEFAULT_HOSTS = "127.0.0.1:9092"


class UntilInterrupted:
    """For a command that runs until Ctrl-C (``lag --watch``, ``consume --follow``): SIGINT
    raises KeyboardInterrupt, as Python's own handler does, and is also noted, for
    :meth:`check` to raise again. Python drops an exception raised inside a ``__del__``
    (printing "Exception ignored in"), so a Ctrl-C whose handler ran there would otherwise be
    lost, and the command would run on. From the main thread only (elsewhere: no handler), and
    only in place of Python's own handler: a SIGINT the process was started ignoring (a script's
    background job, ``nohup``) stays ignored, and a handler the program set stays its own."""

    def __init__(self):
        self.interrupted = False
        self._previous = None

    def _on_sigint(self, signum, frame):
        self.interrupted = True
        raise KeyboardInterrupt

    def check(self):
        """Raise KeyboardInterrupt if a Ctrl-C came, even one whose exception was dropped."""
        if self.interrupted:
            raise KeyboardInterrupt

    def __enter__(self):
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None


class CommandError(click.ClickException):
    """A failure the operator can fix, said in one line (exit 1)."""

    def show(self, file=None):
        click.echo("error: %s" % self.format_message(), err=True, file=file)


def one_line(exc, hosts_option="--hosts"):
    """An exception as one line: its class name unless the message says enough. The hints
    that name the Python arguments (``security_protocol``, ``SslConfig``'s ``cafile``,
    ``rdkafka_config[...]``, ``hosts``, ``zookeeper_hosts``) name the command's options
    instead (``hosts_option``: ``--hosts``, or kafka-tools' ``-b/--broker``)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    for python, here in _cli_wording(hosts_option):
        text = python.sub(here, text) if isinstance(python, re.Pattern) else text.replace(python, here)
    return text if isinstance(exc, (KafkaException, CommandError)) else "%s: %s" % (type(exc).__name__, text)


def _cli_wording(hosts_option):
    """``(the Python wording, the command line's)`` pairs: strings or patterns."""
    return (
        (exceptions.PLAINTEXT_TO_TLS_HINT, "; a TLS listener does this to a plaintext client: if the listener "
                                           "speaks TLS, give -X security.protocol=ssl (or sasl_ssl) and "
                                           "-X ssl.ca.location=CA.pem"),
        (exceptions.NO_SASL_HINT, "; a SASL listener does this to a client that does not authenticate: if the "
                                  "listener wants SASL, give -X security.protocol=sasl_plaintext (or sasl_ssl) "
                                  "-X sasl.mechanism=M -X sasl.username=U -X sasl.password=P"),
        (exceptions.NOT_KAFKA_HTTP_HINT, exceptions.NOT_KAFKA_HTTP_HINT.replace("the host and port", hosts_option)),
        (exceptions.NO_TLS_ANSWER_HINT, "no broker answered the TLS handshake: if the listener is plaintext, give "
                                        "-X security.protocol=plaintext (or sasl_plaintext)"),
        (exceptions.NO_OAUTH_TOKEN, "sasl.mechanism OAUTHBEARER has no token to send: give "
                               "-X sasl.oauthbearer.method=oidc with -X sasl.oauthbearer.client.id=..., "
                               "-X sasl.oauthbearer.client.secret=... and -X sasl.oauthbearer.token.endpoint.url=..., "
                               "or -X enable.sasl.oauthbearer.unsecure.jwt=true (unsigned tokens, for tests)"),
        (re.compile(r" \(SslConfig's \w+\)"), ""),  # the -X property the message names is what was given
        (re.compile(r"\brdkafka_config\['([^']*)'\]"), r"-X \1"),
        (re.compile(r"^hosts(:| must)"), hosts_option + r"\1"),
        (re.compile(r"^zookeeper_hosts\b"), "--zookeeper"),
        (re.compile(r"\brdkafka_config's "), "-X "),
    )


class Group(click.Group):
    """A click group whose commands' failures are one line and exit 1 (no traceback; set
    ``PYRDK_TRACEBACK=1`` to see one); a closed pipe on stdout ends a command quietly (exit 0)."""

    def parse_args(self, ctx, args):
        """An argument that is not UTF-8 (Python holds its bytes as surrogates) is a usage
        error naming it: names, groups and values go to Kafka as UTF-8."""
        for arg in args:
            try:
                arg.encode("utf-8")
            except UnicodeEncodeError:
                raise click.UsageError("argument %s is not UTF-8 text: topics, groups and values must be UTF-8"
                                       % repr(os.fsencode(arg))[1:], ctx) from None
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            raise click.exceptions.Exit(130) from None
        except BrokenPipeError:  # the reader went away (| head): done, quietly, as consume is
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # for the flush at exit
            raise click.exceptions.Exit(0) from None
        except Exception as exc:
            if os.environ.get("PYRDK_TRACEBACK") == "1":
                raise
            env = ctx.find_object(Env)
            raise CommandError(one_line(exc, env.hosts_option if env else "--hosts")) from None


def setup_logging(verbose):
    """librdkafka's lines go to stderr only with ``--verbose``: without it a failure is told
    once, in the command's one-line error. kazoo's warning for a ``--zookeeper`` chroot that
    does not exist (two lines naming its source file) is not shown: no group is there."""
    warnings.filterwarnings("ignore", message="No chroot path exists", category=UserWarning, module="kazoo")
    if verbose:
        logging.basicConfig(level=logging.DEBUG if verbose > 1 else logging.INFO,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
    else:
        logging.getLogger("pyrdk").setLevel(logging.CRITICAL)
        logging.getLogger("kazoo").setLevel(logging.CRITICAL)


verbose_option = click.option("-v", "--verbose", count=True,
                              help="Log librdkafka's lines to stderr (-vv: at DEBUG level too, where librdkafka's "
                                   "debug lines need -X debug=CONTEXTS, e.g. -X debug=broker,protocol).")


class Env:
    """The connection a command runs against; the client is made on first use and closed
    with the command."""

    def __init__(self, ctx, hosts, zookeeper=None, timeout_ms=10000, broker_version=None, rdkafka_config=None,
                 kafka_tools=False):
        self.hosts = hosts
        # the option that names the brokers, and the command that lists the topics, for the messages
        self.hosts_option = "-b/--broker" if kafka_tools else "--hosts"
        self.topics_command = "kafka-tools -b %s print_topics" % hosts if kafka_tools else "pyrdk topics"
        self.zookeeper = zookeeper
        self.timeout_ms = timeout_ms
        self.broker_version = broker_version
        self.rdkafka_config = rdkafka_config or {}
        self._client = None
        ctx.call_on_close(self.close)

    @property
    def client(self):
        if self._client is None:
            # Internal topics (__consumer_offsets...) too: `topics --internal` lists them, and an
            # operator describes, reads or deletes them by name like any other.
            self._client = KafkaClient(hosts=self.hosts, zookeeper_hosts=self.zookeeper,
                                       socket_timeout_ms=self.timeout_ms, rdkafka_config=self.rdkafka_config,
                                       exclude_internal_topics=False)
        return self._client

    def producer_config(self):
        """The ``-X`` properties a producer reads, for a command's producer to take as its own:
        they then win over those its arguments set (linger, acks, message size...), where the
        client's would not."""
        return self._config_of("producer")

    def consumer_config(self):
        """The ``-X`` properties a consumer reads, for a command's consumer to take as its own
        (isolation.level, fetch sizes...: its arguments set them too)."""
        return self._config_of("consumer")

    def _config_of(self, kind):
        read = self.client.cluster.config_for(kind)
        return {k: v for k, v in self.rdkafka_config.items() if k in read}

    def topic(self, name):
        """The existing topic ``name``; an unknown one is an error, never created (brokers
        that create topics on demand would otherwise make it)."""
        if isinstance(name, bytes):
            name = name.decode()
        if name.encode() not in self.client.topics:
            raise CommandError("unknown topic %r on %s (`%s` lists them)" % (name, self.hosts, self.topics_command))
        return self.client.topics[name]

    def close(self):
        if self._client is not None:
            self._client.close()
            self._client = None


pass_env = click.make_pass_decorator(Env)


def connection_options(f):
    """``--hosts``, ``--zookeeper`` and ``--timeout-ms``."""
    f = click.option("--timeout-ms", type=click.IntRange(min=10, max=300000), default=10000, show_default=True,
                     help="Bound on every request to the cluster (librdkafka's socket.timeout.ms: 10 to "
                          "300000).")(f)
    f = click.option("--zookeeper", envvar="PYRDK_ZOOKEEPER", default=None,
                     help="ZooKeeper connect string, for ZooKeeper-coordinated groups "
                          "[env: PYRDK_ZOOKEEPER].")(f)
    return click.option("--hosts", envvar="PYRDK_HOSTS", default=DEFAULT_HOSTS, show_default=True,
                        help="Bootstrap brokers, host:port,... [env: PYRDK_HOSTS].")(f)


def _rdkafka_properties(ctx, param, items):
    """``-X NAME=VALUE`` items as a dict; without any, ``$PYRDK_RDKAFKA_CONFIG`` split as a
    shell splits words, so that a quoted value may hold spaces (a password). An item that is
    not NAME=VALUE is shown only when it looks like a property name (``a.b``): it may be a
    piece of a secret."""
    where = "-X"
    if not items and os.environ.get(RDKAFKA_CONFIG_ENV, "").strip():
        where = "$" + RDKAFKA_CONFIG_ENV
        try:
            items = shlex.split(os.environ[RDKAFKA_CONFIG_ENV])
        except ValueError as exc:  # an unclosed quote
            raise click.BadParameter("%s cannot be split into NAME=VALUE words (%s): quote a value as a "
                                     "shell would" % (where, exc), ctx, param) from None
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            named = re.fullmatch(r"[a-z0-9_-]+(\.[a-z0-9_-]+)+", item)  # a property name, not a secret's piece
            shown = repr(item) if named else "an item of %d characters" % len(item)
            raise click.BadParameter("%s in %s is not NAME=VALUE (quote a value that holds spaces)" % (shown, where),
                                     ctx, param)
        out[name.strip()] = value
    return out


RDKAFKA_CONFIG_ENV = "PYRDK_RDKAFKA_CONFIG"

rdkafka_option = click.option(
    "-X", "--rdkafka-config", "rdkafka_config", multiple=True, metavar="NAME=VALUE",
    callback=_rdkafka_properties,
    help="A librdkafka property of every connection, repeatable: for TLS -X security.protocol=ssl "
         "-X ssl.ca.location=ca.pem, for SASL -X security.protocol=sasl_ssl -X sasl.mechanism=SCRAM-SHA-512 "
         "-X sasl.username=U -X sasl.password=P [env: PYRDK_RDKAFKA_CONFIG, NAME=VALUE words split as a "
         "shell splits them].")


json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document, for scripts.")


def emit_json(doc):
    click.echo(json.dumps(doc, indent=2, sort_keys=False, default=str))


def is_terminal(stream=None):
    return (stream or sys.stdout).isatty()


def table(headers, rows, title=None, numalign="right"):
    """Print ``rows`` under ``headers``: a rich table on a terminal, aligned plain text
    (tabulate's ``simple`` layout, which scripts can split on whitespace) otherwise."""
    rows = [["" if v is None else v for v in row] for row in rows]
    if is_terminal():
        from rich import box
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text
        # Text, not str: rich reads a str as markup, and names are the cluster's ("[bold]x" or "[/]")
        t = Table(title=Text(title) if title else None, box=box.SIMPLE_HEAD, title_justify="left")
        for i, h in enumerate(headers):
            numeric = rows and all(isinstance(r[i], (int, float)) for r in rows)
            t.add_column(str(h), justify="right" if numeric else "left")
        for row in rows:
            t.add_row(*[Text(_cell(v)) for v in row])
        Console(width=max(shutil.get_terminal_size().columns, 80)).print(t)
        return
    if title:
        click.echo(title)
    click.echo(plain_table(headers, rows, numalign))


def _cell(value):
    if isinstance(value, int) and not isinstance(value, bool):
        return "{:,}".format(value) if abs(value) >= 10000 else str(value)
    return str(value)


def plain_table(headers, rows, numalign="right"):
    """Columns two spaces apart under a line of dashes (tabulate's ``simple`` format);
    numbers aligned by ``numalign``, the rest to the left."""
    cells = [[str(h) for h in headers]] + [[str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [bool(rows) and all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) for r in rows)
               for i in range(len(headers))]

    def line(values):
        out = []
        for i, v in enumerate(values):
            if numeric[i] and numalign == "center":
                out.append(v.center(widths[i]))
            elif numeric[i]:
                out.append(v.rjust(widths[i]))
            else:
                out.append(v.ljust(widths[i]))
        return "  ".join(out).rstrip()

    return "\n".join([line(cells[0]), "  ".join("-" * w for w in widths)] + [line(r) for r in cells[1:]])


def parse_datetime(text):
    """An ISO 8601 date and time (``2024-05-01T12:00:00``, optionally with a zone; UTC
    without one), or None if ``text`` is not one."""
    try:
        value = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value


MAX_OFFSET = 2 ** 63 - 2  # offsets are int64 (the last one is never a position to read from)


class OffsetSpec(click.ParamType):
    """``earliest``, ``latest``, an offset (an int >= 0) or an ISO datetime."""
    name = "earliest|latest|OFFSET|DATETIME"

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        text = value.strip().lower()
        if text in ("earliest", "latest"):
            return text
        if text.isdigit():
            if int(text) > MAX_OFFSET:
                self.fail("%s is past the largest offset Kafka has (%d)" % (text, MAX_OFFSET), param, ctx)
            return int(text)
        when = parse_datetime(value.strip())
        if when is None:
            self.fail("%r is not earliest, latest, an offset or a datetime like 2024-05-01T12:00:00"
                      % value, param, ctx)
        return when


class GroupName(click.ParamType):
    """A consumer group's name: not empty (no group has it, and a broker may take it for every
    group)."""
    name = "GROUP"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            self.fail("%r is no group's name: name the consumer group" % value, param, ctx)
        return value


class Datetime(click.ParamType):
    """An ISO datetime (UTC without a zone)."""
    name = "DATETIME"

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        when = parse_datetime(value.strip())
        if when is None:
            self.fail("%r is not a datetime like 2024-05-01T12:00:00" % value, param, ctx)
        return when


def decode(data):
    """Bytes as text for printing (undecodable bytes escaped), None as ''."""
    if data is None:
        return ""
    return data.decode("utf-8", "backslashreplace")
