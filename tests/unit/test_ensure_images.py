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
