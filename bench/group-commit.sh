#!/bin/bash
# Shows group commit: counts the workers' fdatasync calls against acknowledged durable writes during
# a 5 s write load (wrk, 32 connections). Needs strace and wrk (installed from Debian when missing).
# Run after `npm install`:   bash bench/group-commit.sh
set -e
here=$(cd "$(dirname "$0")/.." && pwd)
command -v strace >/dev/null && command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace wrk; }
dir=$(mktemp -d)
ROOT=$(node -e "import(process.argv[1]).then((m) => console.log(m.generateToken().value))" "$here/dist/src/auth/token-format.js")
COFFER_PORT=18810 COFFER_DATA_DIR=$dir/data COFFER_MASTER_KEY_FILE=$dir/k COFFER_ROOT_TOKEN=$ROOT COFFER_LOG_LEVEL=warn node "$here/dist/src/main.js" serve &
PID=$!
sleep 1.5
WORKERS=$(pgrep -P $PID | tr '\n' ' ')
cat > $dir/put.lua <<LUA
wrk.method = "PUT"; wrk.headers["Authorization"] = "Bearer $ROOT"; wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"value":"pppppppppppppppppppppppppppppppp","type":"secret"}'
counter = 0
request = function() counter = counter + 1; return wrk.format(nil, "/v1/kv/gc/k" .. counter) end
LUA
STRACES=""
for w in $WORKERS; do strace -f -e trace=fdatasync -p $w -o $dir/strace.$w 2>/dev/null & STRACES="$STRACES $!"; done
sleep 0.5
wrk -t1 -c32 -d5s -s $dir/put.lua http://127.0.0.1:18810/ | grep -E "requests in|Requests/sec"
sleep 0.3; kill $STRACES 2>/dev/null; sleep 0.3
echo "fdatasync calls by the workers: $(cat $dir/strace.* | grep -c 'fdatasync(')"
kill -TERM $PID; wait $PID 2>/dev/null || true
rm -rf $dir
