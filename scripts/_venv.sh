# Sourced by the scripts: make .venv (once) with svir-proto installed editable and the extras the
# calling script needs ($1). Each set of extras has its own stamp, so whichever script runs first,
# the other still installs what it needs (pip never removes what an earlier set installed).
# PYTHON picks the interpreter and VENV the folder (scripts/test-pythons makes one per Python).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="${PYTHON:-python3}"
venv="${VENV:-.venv}"
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
fi
stamp="$venv/.installed-${1//,/-}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q -e ".[$1]"
  touch "$stamp"
fi
