#!/usr/bin/env bash
# Runs the repository's pre-commit hooks (.pre-commit-hooks.yaml) the way a user's
# pre-commit does: `pre-commit try-repo` (pinned, pip-installed into a venv under the target
# dir) against a temporary git repository holding a valid and an invalid discovery
# document and an agent card. The hooks must pass on the valid files, fail (naming the rule
# and the line) on the invalid one, and leave unrelated files alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
target_dir=${CARGO_TARGET_DIR:-$root/target}
export CARGO_TARGET_DIR=$target_dir   # the hook's build reuses this target dir
pin=4.7.0

venv=$target_dir/validate-tools/pre-commit-venv
if [[ ! -x $venv/bin/pre-commit ]] || [[ $("$venv/bin/pre-commit" --version) != "pre-commit $pin" ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "pre-commit==$pin"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PRE_COMMIT_HOME=$work/cache
repo=$work/site
mkdir -p "$repo/public/.well-known" "$repo/other"
git -C "$repo" init --quiet
cp tests/vectors/discovery/valid/minimal.json "$repo/public/.well-known/openwop"
cp tests/vectors/agent-card/valid/host-card.json "$repo/public/.well-known/agent-card.json"
echo '{"not": "a discovery document"}' >"$repo/other/data.json"
git -C "$repo" add -A
git -C "$repo" -c user.name=t -c user.email=t@example.test commit --quiet -m init

run() { (cd "$repo" && "$venv/bin/pre-commit" try-repo "$root" "$@" --all-files --verbose 2>&1); }

out=$(run openwop-validate) || { echo "$out" >&2; echo "the discovery hook failed on a valid document" >&2; exit 1; }
grep -q "1 document, 0 invalid" <<<"$out" || { echo "$out" >&2; echo "the hook did not check public/.well-known/openwop alone" >&2; exit 1; }
out=$(run openwop-validate-agent-card) || { echo "$out" >&2; echo "the agent-card hook failed on a valid card" >&2; exit 1; }
grep -q "1 document, 0 invalid" <<<"$out" || { echo "$out" >&2; echo "the agent-card hook did not check the card alone" >&2; exit 1; }

cp tests/vectors/discovery/invalid/discovery.no-grpc.json "$repo/public/.well-known/openwop"
git -C "$repo" add -A
if out=$(run openwop-validate); then
  echo "$out" >&2; echo "the discovery hook passed an invalid document" >&2; exit 1
fi
grep -Eq "public/\.well-known/openwop:[0-9]+:[0-9]+: error: discovery\.no-grpc: " <<<"$out" \
  || { echo "$out" >&2; echo "the failure does not name the file, line and rule" >&2; exit 1; }
echo "pre-commit $pin try-repo: the discovery and agent-card hooks pass valid files and stop an invalid one"
