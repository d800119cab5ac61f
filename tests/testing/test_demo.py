"""pyrdk.testing.demo: the page views and the checks that decide the demo's exit status,
and a small run of the whole pipeline in the session's SparkSession."""
import pytest

from pyrdk.testing import demo
from tests.fix_kafka import unique_name

START = 1700000000000 // 60000 * 60000


def test_page_views_tally_what_they_make():
    views = demo.PageViews(START)
    made = views.make(1200, 2 * 60000)
    assert len(made) == 1200 and sum(views.per_minute.values()) == 1200
    assert {ms for _, ms in views.per_minute} == {START, START + 60000}
    key, value, ts = made[0]
    assert value == b'{"user":"%s","url":"%s"}' % (key, value.split(b'"url":"')[1][:-2])
    top = views.top_users(3)
    assert [n for _, n in top] == sorted((n for _, n in top), reverse=True)
    assert top[0][1] == max(views.per_user.values())


def test_check_accepts_right_counts_and_names_wrong_ones():
    old, new = demo.PageViews(START), demo.PageViews(START, seed=8)
    old.make(500, 60000)
    new.make(100, 60000)
    per_minute = [{"url": url, "minute": demo._minute(ms), "views": n} for (url, ms), n in old.per_minute.items()]
    top = [{"user": u, "views": n} for u, n in old.top_users()]
    assert demo.check(old, new, per_minute, top, 100, new.checkouts) == []
    per_minute[0] = dict(per_minute[0], views=per_minute[0]["views"] + 1)
    problems = "\n".join(demo.check(old, new, per_minute, top[:-1], 99, new.checkouts + 2))
    assert "views per url per minute: 1 of" in problems
    assert "top users: got" in problems
    assert "the stream read 99 page views, expected 100" in problems
    assert "checkouts written by the stream: got %d, expected %d" % (new.checkouts + 2, new.checkouts) in problems


@pytest.mark.kafka
@pytest.mark.spark
def test_demo_pipeline_against_the_session_broker(kafka_hosts, spark, tmp_path, capsys):
    status = demo.run(kafka_hosts, 3000, 400, unique_name("demo"), spark=spark, checkpoint=str(tmp_path))
    out = capsys.readouterr().out
    assert status == 0, out
    assert "OK: 3000 page views counted exactly" in out
    assert "batch job: read 3000 page views" in out
    assert "new page views" in out and "rank  user" in out
