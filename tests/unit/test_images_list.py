"""`harness images list`: versions built, size, age, and which tags the checkout would no
longer build (stale). The Docker answer is a stand-in: this tests the table, not Docker."""
from types import SimpleNamespace

from clusters import images


def _image(tags, kind, version="", size_mb=400, created="2026-11-25T08:00:00.123456789Z"):
    labels = {images.IMAGE_LABEL: kind, **({"harness.kafka-version": version} if version else {})}
    return SimpleNamespace(tags=tags, labels=labels, attrs={"Size": size_mb * 2**20, "Created": created})


def test_the_list_says_version_size_age_and_staleness(monkeypatch):
    fresh = images.kafka_image_tag("4.1.1")
    listed = [_image([fresh], "kafka", "4.1.1"), _image(["harness-kafka:4.1.1-000000000000"], "kafka", "4.1.1"),
              _image([images.base_image_tag()], "base", size_mb=340)]
    client = SimpleNamespace(images=SimpleNamespace(list=lambda filters: listed))
    monkeypatch.setattr(images, "docker_client", lambda: client)
    rows = images.list_images()
    assert [r["kind"] for r in rows] == ["base", "kafka", "kafka"]
    assert {r["tag"]: r["current"] for r in rows} == {
        images.base_image_tag(): True, fresh: True, "harness-kafka:4.1.1-000000000000": False}
    assert rows[1]["size_mb"] == 400 and rows[1]["age_s"] > 0
    table = images.images_table(rows)
    assert "4.1.1" in table and "400 MB" in table and table.count("(stale: inputs changed)") == 1
    assert images._age_text(90) == "2 min" and images._age_text(7200) == "2 h" and images._age_text(None) == "?"
