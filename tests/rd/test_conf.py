"""rd.conf: ``rd_kafka_conf_set`` / ``rd_kafka_conf_get`` and the errors of a refused property."""
import pytest

from pyrdk.exceptions import ConfigurationError, KafkaException
from pyrdk.rd.conf import Conf, to_str
from pyrdk.rd.handle import Handle


@pytest.fixture
def conf():
    c = Conf()
    yield c
    c.destroy()


@pytest.mark.parametrize("value,text", [
    (True, "true"), (False, "false"), (5, "5"), (2.5, "2.5"), ("abc", "abc"), (b"abc", "abc"),
    (["a:1", "b:2"], "a:1,b:2"), (("x", 1), "x,1"),
])
def test_to_str(value, text):
    assert to_str("key", value) == text


def test_to_str_takes_integers_of_other_types():
    """A value read from a numpy array, as a producer's required_acks=np.int64(1)."""
    np = pytest.importorskip("numpy")
    assert to_str("key", np.int64(-1)) == "-1"
    assert to_str("key", np.uint16(500)) == "500"


@pytest.mark.parametrize("key,value,text", [
    ("client.id", "pyrdk-test", "pyrdk-test"),
    ("client.id", b"bytes-id", "bytes-id"),
    ("linger.ms", 7, "7"),
    ("enable.idempotence", True, "true"),
    ("bootstrap.servers", ["127.0.0.1:1", "127.0.0.1:2"], "127.0.0.1:1,127.0.0.1:2"),
    ("acks", "all", "-1"),  # an alias: librdkafka reports request.required.acks
])
def test_set_then_get(conf, key, value, text):
    conf.set(key, value)
    assert conf.get(key) == text


def test_constructor_applies_the_dict():
    c = Conf({"client.id": "from-dict", "linger.ms": 3})
    try:
        assert (c.get("client.id"), c.get("linger.ms")) == ("from-dict", "3")
    finally:
        c.destroy()


def test_get_unknown_key_is_none(conf):
    assert conf.get("no.such.property") is None


def test_unknown_key_names_key_value_and_reason(conf):
    with pytest.raises(ConfigurationError) as info:
        conf.set("no.such.property", 12)
    text = str(info.value)
    assert "no.such.property" in text and "12" in text
    assert "No such configuration property" in text  # librdkafka's own words


@pytest.mark.parametrize("key,value,reason", [
    ("acks", "sometimes", "Invalid value"),
    ("linger.ms", -5, "outside allowed range"),
    ("linger.ms", "soon", "Invalid value"),
    ("enable.idempotence", "maybe", "Expected bool value"),
    ("compression.codec", "zip", "Invalid value"),
])
def test_bad_value_names_key_value_and_reason(conf, key, value, reason):
    with pytest.raises(ConfigurationError) as info:
        conf.set(key, value)
    text = str(info.value)
    assert key in text and str(value) in text and reason in text
    assert text == text.strip()


def test_configuration_error_is_a_value_error(conf):
    with pytest.raises(ValueError):
        conf.set("no.such.property", "x")
    assert issubclass(ConfigurationError, KafkaException)


@pytest.mark.parametrize("value", [None, object(), {"a": 1}, [b"ok", None]])
def test_wrong_value_type_is_a_type_error(conf, value):
    with pytest.raises(TypeError) as info:
        conf.set("client.id", value)
    assert "client.id" in str(info.value)


@pytest.mark.parametrize("key", [b"client.id", 5, None])
def test_wrong_key_type_is_a_type_error(conf, key):
    with pytest.raises(TypeError):
        conf.set(key, "x")


def test_take_hands_the_pointer_over():
    c = Conf({"client.id": "taken"})
    ptr = c.take()
    assert c._ptr is None
    c.destroy()  # nothing to free: the pointer belongs to the taker now
    owner = Conf()
    owner.destroy()
    owner._ptr = ptr
    try:
        assert owner.get("client.id") == "taken"
    finally:
        owner.destroy()


def test_destroy_twice(conf):
    conf.destroy()
    conf.destroy()


def test_handle_refuses_a_bad_property_by_name():
    with pytest.raises(ConfigurationError) as info:
        Handle("producer", {"no.such.property": "x"})
    assert "no.such.property" in str(info.value)


def test_a_refused_value_that_may_be_a_secret_is_not_shown():
    """The Java client's sasl.jaas.config holds the password: librdkafka refuses it (saying
    what to use instead), and the error does not repeat it."""
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="hunter2";'
    with pytest.raises(ConfigurationError) as info:
        Handle("consumer", {"sasl.jaas.config": jaas})
    text = str(info.value)
    assert "sasl.jaas.config" in text and "JAAS" in text
    assert "hunter2" not in text and "characters, not shown" in text
    with pytest.raises(ConfigurationError, match="linger.ms='soon'"):  # not a secret: shown
        Handle("producer", {"linger.ms": "soon"})


@pytest.mark.parametrize("key", ["sasl.password", "ssl.key.password",
                                 "sasl.oauthbearer.assertion.private.key.passphrase"])
@pytest.mark.parametrize("value, says", [
    ("hunter2\0x", "holds a NUL character"),
    ("hunter2\udcff", "cannot be encoded as UTF-8"),
    (b"hunter2\xff", "is not UTF-8"),
])
def test_a_secret_that_cannot_be_a_c_string_is_not_shown(key, value, says):
    with pytest.raises(ConfigurationError) as info:
        Handle("producer", {key: value})
    text = str(info.value)
    assert key in text and says in text and "characters, not shown" in text
    assert "hunter2" not in text
    with pytest.raises(ConfigurationError, match=r"'client\\x00id'"):  # not a secret: shown
        Handle("producer", {"client.id": "client\0id"})


def test_handle_reports_rd_kafka_new_refusal():
    with pytest.raises(ConfigurationError) as info:
        Handle("producer", {"enable.idempotence": True, "acks": 1})
    text = str(info.value)
    assert "producer" in text and "enable.idempotence" in text and "acks" in text


def test_handle_refuses_a_wrong_type():
    with pytest.raises(TypeError):
        Handle("consumer", {"group.id": None})


@pytest.mark.parametrize("key", ["sasl.passwrd", "sasl.pasword", "ssl.key.pasword", "sasl.oauthbearer.client.secrt",
                                 "sasl.oauthbearer.tokn.endpoint.url", "ssl.keystore.pwd"])
def test_a_misspelled_or_unlisted_secret_is_not_shown(key):
    """A property librdkafka does not know has its value hidden when its name looks like a
    secret's: a misspelled password is still a password."""
    with pytest.raises(ConfigurationError) as info:
        Handle("producer", {key: "hunter2"})
    text = str(info.value)
    assert "hunter2" not in text, text
    with pytest.raises(ConfigurationError, match="'soon'"):  # unknown, not named like a secret: shown
        Handle("producer", {"linger.mss": "soon"})
