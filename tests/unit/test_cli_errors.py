"""Bad environment → a clear message with the fix and exit 2, nothing started."""
import os
import subprocess
import sys


def run_cli(*args, **env):
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=60)


def test_missing_docker_engine_is_exit_2_with_fix():
    r = run_cli("gc", DOCKER_HOST="unix:///nonexistent/docker.sock")
    assert r.returncode == 2
    assert "no Docker engine answers" in r.stderr and "fix:" in r.stderr


def test_doctor_reports_missing_engine_with_exit_1():
    r = run_cli("doctor", DOCKER_HOST="unix:///nonexistent/docker.sock")
    assert r.returncode == 1
    assert "MISSING] docker engine" in r.stdout and "fix:" in r.stdout


def test_unknown_version_in_images_build_is_exit_2():
    r = run_cli("images", "build", "--version", "2.8")
    assert r.returncode == 2 and "version" in r.stderr and "fix:" in r.stderr
