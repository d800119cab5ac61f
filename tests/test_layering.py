"""The layer table of docs/ARCHITECTURE.md, enforced on the source with ``ast`` (nothing is
imported).

| level | modules                                          | may import from pyrdk                   |
|-------|--------------------------------------------------|-----------------------------------------|
| 0     | ``_rdkafka`` (cffi), ``_core`` (the C core)      | ``_rdkafka`` only by ``_ffi``, ``_core`` only by ``core`` |
| 1     | ``_loader``, ``_ffi``                            | the cffi module (and ``_loader``)       |
| 1     | ``exceptions``, ``common``                       | each other only                         |
| 2     | ``rd/*``                                         | ``_ffi``, level 1, other ``rd``         |
| 2     | ``core/*``                                       | ``_core``, level 1 but ``_ffi``, ``rd``, other ``core`` |
| 3     | pykafka-named modules (``LEVEL3``)               | ``rd``, ``core``, level 1 but ``_ffi``, each other |
| 4     | ``spark/``, ``spout``, ``cli/``, ``metrics``,    | ``exceptions``, ``common``, level 3     |
|       | ``testing/``, ``__main__``, pykafka's            |                                         |
|       | ``connection``, ``protocol``, ``utils/``         |                                         |

Level 3 also holds ``aio/`` (aiokafka's API: its producer, consumer and names),
``consumer`` (what the consumers share), ``exactlyonce`` (consume-process-
produce in transactions), ``handlers`` (pykafka's name; ``Cluster.handler`` is one), ``lag``,
and ``zookeeper`` (what Kafka and pykafka wrote in ZooKeeper: registered brokers, group members,
owners and offsets).

Plus: the identifiers ``ffi`` and ``lib`` appear only in ``_ffi.py`` and ``rd/``; ``kazoo`` is
imported only by ``balancedconsumer.py`` and ``zookeeper.py``;
``pyrdk/__init__.py`` re-exports from levels 1 to 3 (pykafka's ``connection``, ``protocol`` and
``utils`` are imported on first use, by name); ``testing`` may also import ``spark`` (the demo
runs the Spark pipeline), and ``__main__`` (``python -m pyrdk``) imports ``cli``.
"""
import ast
import os

import pytest

PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pyrdk")

GENERATED = "pyrdk._rdkafka"
C_CORE = "pyrdk._core"
LOADER = {"pyrdk._loader", "pyrdk._ffi"}
PURE = {"pyrdk.exceptions", "pyrdk.common"}
LEVEL3 = {"pyrdk." + name for name in (
    "client", "cluster", "broker", "topic", "partition", "producer", "consumer", "simpleconsumer",
    "balancedconsumer", "managedbalancedconsumer", "membershipprotocol", "partitioners",
    "exactlyonce", "handlers", "lag", "zookeeper")}
LEVEL4 = ("pyrdk.spark", "pyrdk.spout", "pyrdk.cli", "pyrdk.metrics", "pyrdk.testing", "pyrdk.__main__",
          "pyrdk.connection", "pyrdk.protocol", "pyrdk.utils")
KAZOO_USERS = {"pyrdk.balancedconsumer", "pyrdk.zookeeper"}
# Level-4 modules that may import another integration: (importer's, imported).
LEVEL4_PAIRS = {("pyrdk.testing", "pyrdk.spark"), ("pyrdk.__main__", "pyrdk.cli")}
CFFI_NAMES = {"ffi", "lib"}


def _within(name, package):
    return name == package or name.startswith(package + ".")


def layer(name):
    """The layer of a pyrdk module: ``"root"``, 0, ``"loader"``, ``"pure"``, 2, 3, 4 or None."""
    if name == "pyrdk":
        return "root"
    if _within(name, GENERATED) or name == C_CORE:
        return 0
    if name in LOADER:
        return "loader"
    if name in PURE:
        return "pure"
    if _within(name, "pyrdk.rd"):
        return 2
    if _within(name, "pyrdk.core"):
        return "core"
    if name in LEVEL3 or _within(name, "pyrdk.aio"):
        return 3
    if any(_within(name, top) for top in LEVEL4):
        return 4
    return None


def integration(name):
    """The level-4 package (or module) that ``name`` belongs to."""
    return next(top for top in LEVEL4 if _within(name, top))


def allowed(importer, target):
    """Whether module ``importer`` may import pyrdk module ``target`` (both dotted names)."""
    src, dst = layer(importer), layer(target)
    if dst is None:
        return False
    if dst == 0:
        return importer == ("pyrdk.core" if target == C_CORE else "pyrdk._ffi")
    if src == "loader":
        return target == "pyrdk._loader"
    if src == "pure":
        return dst == "pure"
    if src == 2:
        return dst in ("loader", "pure", 2)
    if src == "core":
        return target != "pyrdk._ffi" and dst in ("loader", "pure", 2, "core")
    if src == 3:
        return target != "pyrdk._ffi" and dst in ("loader", "pure", 2, "core", 3)
    if src == 4:
        return (dst in ("pure", 3, "root")
                or (dst == 4 and (integration(importer) == integration(target)
                                  or (integration(importer), integration(target)) in LEVEL4_PAIRS)))
    if src == "root":
        return dst in ("loader", "pure", 2, "core", 3)
    return False


def module_name(path, package_dir=PACKAGE_DIR):
    """``.../pyrdk/rd/conf.py`` → ``pyrdk.rd.conf``; ``.../pyrdk/rd/__init__.py`` → ``pyrdk.rd``."""
    rel = os.path.relpath(path, os.path.dirname(package_dir))
    parts = rel[:-len(".py")].split(os.sep)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files(package_dir=PACKAGE_DIR):
    """Every ``.py`` file of the package, sorted."""
    found = []
    for root, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found.extend(os.path.join(root, f) for f in sorted(files) if f.endswith(".py"))
    return found


def known_modules(package_dir=PACKAGE_DIR):
    return {module_name(path, package_dir) for path in source_files(package_dir)} | {GENERATED, C_CORE}


def _imports(tree, importer, is_package, modules):
    """``(lineno, imported module)`` for every import in ``tree``, relative ones resolved."""
    package = importer if is_package else importer.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = "%s.%s" % (base, alias.name)
                yield node.lineno, sub if sub in modules else base


def _identifiers(tree):
    """``(lineno, identifier)`` for names, attributes, arguments, definitions and aliases."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.lineno, node.id
        elif isinstance(node, ast.Attribute):
            yield node.lineno, node.attr
        elif isinstance(node, ast.arg):
            yield node.lineno, node.arg
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.lineno, node.name
        elif isinstance(node, ast.alias):
            yield getattr(node, "lineno", 0), (node.asname or node.name).split(".")[0]
        elif isinstance(node, ast.keyword) and node.arg:
            yield getattr(node, "lineno", 0), node.arg


def violations(importer, source, is_package=False, modules=None, filename="<source>"):
    """Every breach of the layer rules in ``source``, the code of module ``importer``."""
    modules = known_modules() if modules is None else modules
    tree = ast.parse(source, filename)
    found = []
    if layer(importer) is None:
        found.append("%s: module %s is not in the layer table of docs/ARCHITECTURE.md (add it there and to "
                     "tests/test_layering.py)" % (filename, importer))
        return found
    for lineno, target in _imports(tree, importer, is_package, modules):
        top = target.split(".")[0]
        if top == "kazoo" and importer not in KAZOO_USERS:
            found.append("%s:%d: %s imports kazoo; only %s may"
                         % (filename, lineno, importer, " and ".join(sorted(KAZOO_USERS))))
        if top == "pyrdk" and not allowed(importer, target):
            found.append("%s:%d: %s (level %s) may not import %s (level %s)"
                         % (filename, lineno, importer, layer(importer), target, layer(target)))
    if not (importer == "pyrdk._ffi" or _within(importer, "pyrdk.rd")):
        for lineno, name in _identifiers(tree):
            if name in CFFI_NAMES:
                found.append("%s:%d: the identifier %r is reserved for pyrdk._ffi and pyrdk.rd"
                             % (filename, lineno, name))
    return found


@pytest.mark.parametrize("path", source_files(),
                         ids=lambda p: os.path.relpath(p, os.path.dirname(PACKAGE_DIR)))
def test_module_respects_layers(path):
    with open(path, encoding="utf-8") as f:
        source = f.read()
    found = violations(module_name(path), source, is_package=path.endswith("__init__.py"),
                       filename=os.path.relpath(path, os.path.dirname(PACKAGE_DIR)))
    assert not found, "\n".join(found)


def test_the_walk_sees_the_package():
    names = known_modules()
    assert {"pyrdk._ffi", "pyrdk.exceptions", "pyrdk.rd.handle", "pyrdk.testing"} <= names


# -- the checker itself ----------------------------------------------------------------------------

MODULES = {"pyrdk", "pyrdk._ffi", "pyrdk._loader", GENERATED, "pyrdk.exceptions", "pyrdk.common",
           "pyrdk.rd", "pyrdk.rd.handle", "pyrdk.rd.errors", "pyrdk.client", "pyrdk.producer",
           "pyrdk.balancedconsumer", "pyrdk.testing", "pyrdk.testing.demo", "pyrdk.cli",
           "pyrdk.cli.main"}


def check(importer, source, is_package=False):
    return violations(importer, source, is_package=is_package, modules=MODULES)


@pytest.mark.parametrize("importer,source", [
    ("pyrdk._ffi", "from pyrdk import _loader\nfrom pyrdk._rdkafka import ffi, lib\n"),
    ("pyrdk.exceptions", "from pyrdk import common\n"),
    ("pyrdk.rd.handle", "from pyrdk._ffi import ffi, lib\nfrom pyrdk.rd import errors\n"
                        "from . import errors\nfrom pyrdk.exceptions import KafkaException\n"),
    ("pyrdk.producer", "from pyrdk.rd.handle import Handle\nfrom pyrdk import common, client\n"
                       "from .exceptions import ProducerStoppedException\n"),
    ("pyrdk.balancedconsumer", "import kazoo.client\nfrom kazoo.exceptions import NoNodeError\n"),
    ("pyrdk.zookeeper", "from kazoo.client import KazooClient\n"),
    ("pyrdk.protocol", "from pyrdk import common\nfrom pyrdk.common import Message\n"),
    ("pyrdk.testing.demo", "import pyrdk\nfrom pyrdk.common import OffsetType\n"
                           "from pyrdk.testing import DevCluster\nfrom . import DevCluster\n"),
    ("pyrdk", "from pyrdk.client import KafkaClient\nfrom pyrdk import _ffi\n"
              "from pyrdk.core import librdkafka_version\n"),
    ("pyrdk.cli.main", "from ..client import KafkaClient\n"),
    ("pyrdk.testing.demo", "import pyrdk.spark\nfrom pyrdk.spark.source import KafkaDataSource\n"),
])
def test_checker_accepts_allowed_imports(importer, source):
    assert check(importer, source) == []


@pytest.mark.parametrize("importer,source,expected", [
    ("pyrdk.client", "from pyrdk._ffi import ffi\n", ["may not import pyrdk._ffi", "'ffi'"]),
    ("pyrdk.client", "from pyrdk import _rdkafka\n", ["may not import pyrdk._rdkafka"]),
    ("pyrdk.rd.handle", "from pyrdk._rdkafka import lib\n", ["may not import pyrdk._rdkafka"]),
    ("pyrdk.rd.handle", "from pyrdk.client import KafkaClient\n", ["may not import pyrdk.client"]),
    ("pyrdk.rd.handle", "from .. import client\n", ["may not import pyrdk.client"]),
    ("pyrdk.common", "from pyrdk._ffi import string\n", ["may not import pyrdk._ffi"]),
    ("pyrdk.exceptions", "import pyrdk.rd.errors\n", ["may not import pyrdk.rd.errors"]),
    ("pyrdk.testing.demo", "from pyrdk.rd.handle import Handle\n", ["may not import pyrdk.rd.handle"]),
    ("pyrdk.testing.demo", "from pyrdk import _ffi\n", ["may not import pyrdk._ffi"]),
    ("pyrdk.testing.demo", "from pyrdk.cli import main\n", ["may not import pyrdk.cli.main"]),
    ("pyrdk.spark.source", "from pyrdk.testing import DevCluster\n", ["may not import pyrdk.testing"]),
    ("pyrdk.producer", "import kazoo\n", ["imports kazoo"]),
    ("pyrdk.client", "from kazoo.client import KazooClient\n", ["imports kazoo"]),
    ("pyrdk.cluster", "from pyrdk.protocol import CreateTopicRequest\n", ["may not import pyrdk.protocol"]),
    ("pyrdk.protocol", "from pyrdk.utils import compat\n", ["may not import pyrdk.utils"]),
    ("pyrdk.producer", "def f(handle):\n    return handle.lib\n", ["'lib'"]),
    ("pyrdk.producer", "def f(ffi=None):\n    pass\n", ["'ffi'"]),
    ("pyrdk.producer", "def f():\n    from pyrdk._ffi import lib as _l\n", ["may not import pyrdk._ffi"]),
    ("pyrdk", "from pyrdk._rdkafka import lib\n", ["may not import pyrdk._rdkafka", "'lib'"]),
    ("pyrdk.helpers", "x = 1\n", ["not in the layer table of docs/ARCHITECTURE.md"]),
])
def test_checker_catches_violations(importer, source, expected):
    found = check(importer, source)
    assert found, "no violation reported for %s:\n%s" % (importer, source)
    text = "\n".join(found)
    for fragment in expected:
        assert fragment in text


def test_checker_resolves_relative_imports_in_packages():
    assert check("pyrdk.rd", "from . import handle\n", is_package=True) == []
    found = check("pyrdk.testing", "from ..rd import handle\n", is_package=True)
    assert any("may not import pyrdk.rd.handle" in v for v in found)
