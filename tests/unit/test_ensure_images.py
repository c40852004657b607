"""ensure_images without Docker (issue 37): no build lock when every image exists, the
lock and a build when one is missing."""
from contextlib import contextmanager

from clusters import images
from clusters.versions import resolve_version


def test_ensure_images_takes_no_build_lock_when_every_image_exists(monkeypatch):
    @contextmanager
    def no_lock():
        raise AssertionError("the build lock was taken")
        yield
    monkeypatch.setattr(images, "_build_lock", no_lock)
    monkeypatch.setattr(images, "_image_exists", lambda tag: True)
    tags = images.ensure_images(["4.3"], toxiproxy=True)
    kv = resolve_version("4.3")
    assert tags == {"base": images.base_image_tag(), f"kafka-{kv.version}": images.kafka_image_tag(kv),
                    "toxiproxy": images.toxiproxy_image_tag()}


def test_ensure_images_builds_under_the_lock_when_one_is_missing(monkeypatch):
    taken, built = [], []

    @contextmanager
    def lock():
        taken.append(True)
        yield
    missing = images.toxiproxy_image_tag()
    monkeypatch.setattr(images, "_build_lock", lock)
    monkeypatch.setattr(images, "_image_exists", lambda tag: tag != missing)
    monkeypatch.setattr(images, "ensure_toxiproxy_image", lambda force=False: built.append(1) or missing)
    images.ensure_images(["4.3"], toxiproxy=True)
    assert taken == [True] and built == [1]


def _fresh_machine(monkeypatch, fetched, base="built"):
    """No image exists; the base build and the fetches record when they ran."""
    monkeypatch.setattr(images, "_build_lock", contextmanager(lambda: (yield)))
    monkeypatch.setattr(images, "_image_exists", lambda tag: False)
    monkeypatch.setattr(images, "kafka_jars", lambda kv: fetched.append(f"jars {kv.version}"))
    monkeypatch.setattr(images, "toxiproxy_binary", lambda: fetched.append("toxiproxy"))
    monkeypatch.setattr(images, "ensure_kafka_image", lambda kv, force=False: f"kafka {kv.version}")
    monkeypatch.setattr(images, "ensure_toxiproxy_image", lambda force=False: "toxiproxy")

    def ensure_base_image(force=False):
        fetched.append("base")
        if base != "built":
            raise images.HarnessError(base)
        return "base"
    monkeypatch.setattr(images, "ensure_base_image", ensure_base_image)


def test_a_fresh_machine_fetches_jars_and_toxiproxy_while_the_base_is_built(monkeypatch):
    fetched = []
    _fresh_machine(monkeypatch, fetched)
    tags = images.ensure_images(["3.9", "4.3"], toxiproxy=True)
    versions = [resolve_version(v).version for v in ("3.9", "4.3")]
    assert sorted(fetched) == sorted(["base", "toxiproxy", *(f"jars {v}" for v in versions)])
    assert tags["base"] == "base" and tags["toxiproxy"] == "toxiproxy"


def test_a_failed_base_build_is_raised_after_the_fetches_end(monkeypatch):
    fetched = []
    _fresh_machine(monkeypatch, fetched, base="debootstrap failed")
    try:
        images.ensure_images(["4.3"], toxiproxy=False)
    except images.HarnessError as e:
        assert "debootstrap failed" in str(e)
    else:
        raise AssertionError("no error raised")
    assert sorted(fetched) == ["base", f"jars {resolve_version('4.3').version}"]


def test_python_m_clusters_images_says_what_failed_and_exits_2(monkeypatch, capsys):
    def build_all():
        raise images.HarnessError("Maven: Kafka 4.3.1 jars failed (exit 1)")
    monkeypatch.setattr(images, "build_all", build_all)
    assert images.main() == 2
    assert "harness images: Maven: Kafka 4.3.1 jars failed" in capsys.readouterr().err
