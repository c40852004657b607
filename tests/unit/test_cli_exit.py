"""The CLI's exit code survives a Ctrl-C it handled, wherever the interrupt landed."""
import os
import subprocess
import sys

# A command interrupted inside a string exec (as an import building a dataclass can
# be) that handles it: main() says 130, and so must the process. Run as `python -m`,
# the way the tests run the CLI: that is the path where CPython checks its flag.
INTERRUPTED_IN_EXEC = """
import sys
import harness.cli as cli
def interrupted(args):
    exec("raise KeyboardInterrupt")
parser = cli.build_parser()
cli.build_parser = lambda: parser
for action in parser._subparsers._group_actions[0].choices.values():
    action.set_defaults(func=interrupted)
sys.exit(cli.main(["list"]))
"""


def test_an_interrupt_handled_inside_exec_keeps_the_exit_code(tmp_path):
    (tmp_path / "interrupted_cli.py").write_text(INTERRUPTED_IN_EXEC)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.getcwd()])}
    proc = subprocess.run([sys.executable, "-m", "interrupted_cli"], capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert "harness: interrupted" in proc.stderr
