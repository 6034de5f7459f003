"""Runs a composite GitHub Action's steps the way a runner does, on this machine.

Reads action.yml, takes the declared inputs (defaults filled in, required ones enforced),
then walks the steps in order: evaluates each `if:` (success() by default; always(),
failure(), ==, !=, &&, ||, !, parentheses), expands `${{ ... }}` in `run`, `env` and
`with`, runs `run:` steps with `bash --noprofile --norc -eo pipefail` and the runner's
files (GITHUB_OUTPUT, GITHUB_PATH, GITHUB_ENV, GITHUB_STEP_SUMMARY), and collects step
outputs for later expressions. A `uses:` step (another action, fetched from the network by
a real runner) is not run: it is recorded with its evaluated `with:` so the caller can
check what it would have been given. The exception is the Actions cache
(`actions/cache/restore` and `actions/cache/save`): with `--cache-dir DIR` it is played by a
directory, one entry per key, as the runner's cache service keeps them across jobs, and
without it every restore misses and every save is dropped, as on a runner with no cache.

Usage: run_action.py ACTION_DIR --input NAME=VALUE ... [--cache-dir DIR] --report FILE
Prints each step's output; writes a JSON report; exits 0 when the action succeeded.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml  # PyYAML, which pre-commit brings into the same venv


class Expr:
    """A small evaluator for the GitHub Actions expression language."""

    TOKEN = re.compile(
        r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op>&&|\|\||==|!=|!|\(|\))"
        r"|(?P<num>\d+(?:\.\d+)?)|(?P<id>[A-Za-z_][A-Za-z0-9_.\-]*))"
    )

    def __init__(self, context, status):
        self.context = context
        self.status = status  # "success" or "failure" so far

    def evaluate(self, text):
        self.tokens = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = self.TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ValueError(f"cannot read expression {text!r} at {pos}")
            self.tokens.append(m)
            pos = m.end()
        self.i = 0
        value = self.or_()
        if self.i != len(self.tokens):
            raise ValueError(f"trailing tokens in {text!r}")
        return value

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take_op(self, op):
        t = self.peek()
        if t is not None and t.group("op") == op:
            self.i += 1
            return True
        return False

    def or_(self):
        left = self.and_()
        while self.take_op("||"):
            right = self.and_()
            left = left if truthy(left) else right
        return left

    def and_(self):
        left = self.cmp()
        while self.take_op("&&"):
            right = self.cmp()
            left = right if truthy(left) else left
        return left

    def cmp(self):
        left = self.unary()
        while True:
            if self.take_op("=="):
                left = loose(left) == loose(self.unary())
            elif self.take_op("!="):
                left = loose(left) != loose(self.unary())
            else:
                return left

    def unary(self):
        if self.take_op("!"):
            return not truthy(self.unary())
        if self.take_op("("):
            value = self.or_()
            if not self.take_op(")"):
                raise ValueError("missing )")
            return value
        t = self.peek()
        if t is None:
            raise ValueError("expression ends early")
        self.i += 1
        if t.group("str") is not None:
            return t.group("str")[1:-1].replace("''", "'")
        if t.group("num") is not None:
            return float(t.group("num"))
        name = t.group("id")
        if name in ("true", "false"):
            return name == "true"
        if name == "null":
            return None
        if self.take_op("("):
            if not self.take_op(")"):
                raise ValueError(f"{name}() takes no arguments here")
            return {
                "always": True,
                "success": self.status == "success",
                "failure": self.status == "failure",
                "cancelled": False,
            }[name]
        value = self.context
        for part in name.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value


def truthy(v):
    return v not in (None, False, "", 0)


def loose(v):
    """GitHub compares case-insensitively and coerces types loosely; strings suffice here."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return "" if v is None else str(v).lower()


def text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return "" if v is None else str(v)


def expand(value, expr):
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: text(expr.evaluate(m.group(1))), str(value))


def read_outputs(path):
    """name=value lines and name<<DELIM heredocs, as the runner reads GITHUB_OUTPUT."""
    outputs = {}
    lines = open(path).read().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            body = []
            i += 1
            while i < len(lines) and lines[i] != delim:
                body.append(lines[i])
                i += 1
            outputs[name] = "\n".join(body)
        elif "=" in line:
            name, value = line.split("=", 1)
            outputs[name] = value
        i += 1
    return outputs


def play_cache(uses, with_, cache_dir):
    """actions/cache/restore and /save over a directory: an exact key match only (the action
    declares no restore-keys), the entry copied whole, an existing entry never replaced."""
    key, path = with_["key"], with_["path"]
    assert key and path, f"{uses} needs key and path, given {with_}"
    entry = os.path.join(cache_dir, key) if cache_dir else None
    if uses.startswith("actions/cache/restore@"):
        if entry and os.path.isdir(entry):
            shutil.copytree(entry, path, dirs_exist_ok=True)
            return {"cache-hit": "true", "cache-primary-key": key, "cache-matched-key": key}
        return {"cache-primary-key": key}
    if entry and not os.path.exists(entry):
        shutil.copytree(path, entry)
    return {}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("action_dir")
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--report", required=True)
    parser.add_argument("--cache-dir")
    args = parser.parse_args()

    action_dir = os.path.abspath(args.action_dir)
    action = yaml.safe_load(open(os.path.join(action_dir, "action.yml")))
    assert action["runs"]["using"] == "composite", "not a composite action"
    declared = action.get("inputs", {})
    given = dict(i.split("=", 1) for i in args.input)
    unknown = set(given) - set(declared)
    if unknown:
        sys.exit(f"inputs the action does not declare: {sorted(unknown)}")
    inputs = {}
    for name, spec in declared.items():
        if name in given:
            inputs[name] = given[name]
        elif "default" in spec:
            inputs[name] = str(spec["default"])
        elif spec.get("required"):
            sys.exit(f"required input {name} not given")
        else:
            inputs[name] = ""

    temp = tempfile.mkdtemp(prefix="runner-")
    files = {
        k: os.path.join(temp, k.lower())
        for k in ("GITHUB_PATH", "GITHUB_ENV", "GITHUB_STEP_SUMMARY")
    }
    for f in files.values():
        open(f, "w").close()
    base_env = dict(os.environ)
    base_env.update(files)
    base_env.update(
        {
            "GITHUB_ACTIONS": "true",
            "CI": "true",
            "GITHUB_ACTION_PATH": action_dir,
            "GITHUB_WORKSPACE": os.getcwd(),
            "RUNNER_TEMP": temp,
            "RUNNER_OS": "Linux",
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_REPOSITORY": "example/site",
            "GITHUB_SHA": "0" * 40,
        }
    )
    context = {
        "inputs": inputs,
        "steps": {},
        "runner": {"temp": temp, "os": "Linux"},
        "github": {
            "action_path": action_dir,
            "workspace": os.getcwd(),
            "server_url": "https://github.com",
            "repository": "example/site",
            "sha": "0" * 40,
            "action_repository": "",
            "action_ref": "",
        },
    }
    status = "success"
    report = {"steps": [], "uses": [], "summary": ""}
    for n, step in enumerate(action["runs"]["steps"]):
        expr = Expr(context, status)
        name = step.get("name", f"step {n}")
        condition = step.get("if", "success()")
        condition = re.sub(r"^\$\{\{(.*)\}\}$", r"\1", str(condition).strip())
        if not truthy(expr.evaluate(condition)):
            report["steps"].append({"name": name, "ran": False})
            continue
        env = dict(base_env)
        for line in open(files["GITHUB_ENV"]).read().splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                env[k] = v
        extra_path = [p for p in open(files["GITHUB_PATH"]).read().splitlines() if p]
        if extra_path:
            env["PATH"] = os.pathsep.join(reversed(extra_path)) + os.pathsep + env["PATH"]
        for k, v in (step.get("env") or {}).items():
            env[k] = expand(v, expr)
        if "uses" in step and step["uses"].startswith(("actions/cache/restore@", "actions/cache/save@")):
            with_ = {k: expand(v, expr) for k, v in (step.get("with") or {}).items()}
            outputs = play_cache(step["uses"], with_, args.cache_dir)
            if "id" in step:
                context["steps"][step["id"]] = {"outputs": outputs, "outcome": "success"}
            report["steps"].append({"name": name, "ran": True, "uses": step["uses"], "outputs": outputs})
            print(f"::: {name}: {step['uses']} played by {args.cache_dir or 'no cache'}: {outputs}")
            continue
        if "uses" in step:
            with_ = {k: expand(v, expr) for k, v in (step.get("with") or {}).items()}
            report["uses"].append({"name": name, "uses": step["uses"], "with": with_})
            report["steps"].append({"name": name, "ran": False, "uses": step["uses"]})
            print(f"::: {name}: {step['uses']} is another action; not run here, given {with_}")
            continue
        assert step.get("shell") == "bash", f"{name}: composite run steps must name shell: bash"
        output_file = os.path.join(temp, f"output-{n}")
        open(output_file, "w").close()
        env["GITHUB_OUTPUT"] = output_file
        script = os.path.join(temp, f"step-{n}.sh")
        with open(script, "w") as f:
            f.write(expand(step["run"], expr))
        print(f"::: {name}", flush=True)
        code = subprocess.call(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", script],
            env=env,
            cwd=expand(step.get("working-directory", os.getcwd()), expr),
        )
        outputs = read_outputs(output_file)
        if "id" in step:
            context["steps"][step["id"]] = {
                "outputs": outputs,
                "outcome": "success" if code == 0 else "failure",
            }
        report["steps"].append({"name": name, "ran": True, "exit": code, "outputs": outputs})
        if code != 0:
            status = "failure"
    report["status"] = status
    report["summary"] = open(files["GITHUB_STEP_SUMMARY"]).read()
    report["outputs"] = {
        name: expand(spec.get("value", ""), Expr(context, status))
        for name, spec in (action.get("outputs") or {}).items()
    }
    with open(args.report, "w") as f:
        json.dump(report, f, indent=2)
    sys.exit(0 if status == "success" else 1)


if __name__ == "__main__":
    main()
