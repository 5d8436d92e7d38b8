#!/usr/bin/env bash
# Schemathesis against `memstrata serve`, as three callers: an admin key of every
# namespace (keyed), no key on a store that has keys (nokey), and a store that never had
# one (open). Each run starts a fresh store with the bundled sample conversation in the
# namespace "demo", serves it on a loopback port, and lets Schemathesis generate requests
# from the service's own OpenAPI document with every check on.
#
#   studies/service_fuzz.sh OUT_DIR [MAX_EXAMPLES] [PORT]
#
# Schemathesis is installed once into .venv-fuzz (it is not a dependency of memstrata).
# What it printed is in OUT_DIR/MODE-st.txt, the server's log in OUT_DIR/MODE-server.log;
# OUT_DIR/summary.txt has one line per mode: the cases generated, the failures by check,
# and the 5xx answers the server logged.
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
OUT=$1
N=${2:-100}
PORT=${3:-18810}
PY=${PYTHON:-$HERE/.venv/bin/python}
FUZZ=$HERE/.venv-fuzz
if [ ! -x "$FUZZ/bin/st" ]; then
  python3 -m venv "$FUZZ" && "$FUZZ/bin/pip" install --quiet 'schemathesis>=4.3,<5'
fi
rm -rf "$OUT"
mkdir -p "$OUT"

run() {
  local mode=$1 db=$OUT/$1.db key="" hdr=()
  "$PY" -m memstrata import "$HERE/src/memstrata/data/sample_conversation.jsonl" \
    --db "$db" --namespace demo >/dev/null 2>&1
  if [ "$mode" != open ]; then
    key=$("$PY" -m memstrata keys create --db "$db" -n '*' --scope admin 2>/dev/null |
      grep -o 'msk_[A-Za-z0-9_-]*' | head -1)
  fi
  if [ "$mode" = keyed ]; then hdr=(-H "Authorization: Bearer $key"); fi
  "$PY" -m memstrata serve --db "$db" --port "$PORT" >"$OUT/$mode-server.log" 2>&1 &
  local server=$!
  for _ in $(seq 60); do
    curl -s -o /dev/null "http://127.0.0.1:$PORT/v1/health" && break
    sleep 1
  done
  "$FUZZ/bin/st" run "http://127.0.0.1:$PORT/openapi.json" "${hdr[@]}" --checks all \
    --max-examples "$N" --workers 1 --request-timeout 60 --continue-on-failure \
    --suppress-health-check all >"$OUT/$mode-st.txt" 2>&1
  kill "$server"
  wait "$server" 2>/dev/null
  {
    printf '%s: ' "$mode"
    grep -o '[0-9]* generated, .*' "$OUT/$mode-st.txt" | head -1 | tr -d '\n'
    printf '; failures by check: '
    sed -n '/^Failures:/,/^$/p' "$OUT/$mode-st.txt" | grep -o 'ST[0-9]* [^:]*: [0-9]*' |
      tr '\n' ';' || true
    printf ' server 5xx logged: %s\n' "$(grep -c '" 5[0-9][0-9] ' "$OUT/$mode-server.log")"
  } >>"$OUT/summary.txt"
}

run keyed
run nokey
run open
cat "$OUT/summary.txt"
