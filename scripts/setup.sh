#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks and skips what is already there.
# Prerequisites: Rust through rustup (checked first; the script says how to
# install it) and root or sudo. Installed: Node.js and npm if missing, the wasm target, Chromium and ChromeDriver, Firefox ESR, Mesa's Vulkan drivers
# and Xvfb (Debian), wasm-bindgen-cli at the version pinned in Cargo.toml, trunk 0.21.14,
# geckodriver 0.37.1, and wasm-opt (binaryen 132 from npm).
# Nothing is downloaded from outside the package registries.
# Source it: `source scripts/setup.sh`.

# Sourced by scripts/serve and scripts/test; a shell that sources it by hand
# gets its own options back at the end.
SETUP_SAVED_OPTIONS="$(set +o)"
# A command substitution does not inherit errexit: `set +o` above printed it
# off even where the caller had it on, and restoring that at the end would
# leave a caller such as scripts/test running on after a failed step.
case $- in *e*) SETUP_SAVED_OPTIONS+=$'\nset -e' ;; esac
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WASM_BINDGEN_VERSION="0.2.130"
TRUNK_VERSION="0.21.14"
GECKODRIVER_VERSION="0.37.1"
BINARYEN_VERSION="132"

export PATH="$HOME/.cargo/bin:$ROOT/.tools/node_modules/.bin:$PATH"
export TRUNK_SKIP_VERSION_CHECK=true
export CHROMEDRIVER=/usr/bin/chromedriver
export CHROMIUM=/usr/bin/chromium
export FIREFOX=/usr/bin/firefox-esr
export GECKODRIVER="$HOME/.cargo/bin/geckodriver"
# wasm-bindgen-test-runner gives a whole test binary 20 s in a headless
# browser by default; the runtime's suite waits out backoffs and stalls for
# longer than that on a slow machine. scripts/test bounds each run itself.
export WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-150}"
# Firefox wants a runtime folder; a headless machine may have none.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$ROOT/target/xdg-runtime}"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR" 2>/dev/null || true

say() { echo "[setup] $*" >&2; }

# Whether `$1 --version` prints `$2`. Read whole first: `grep -q` on a pipe
# exits at its match, the tool then dies of SIGPIPE, and pipefail would read
# that as a missing tool.
has_version() {
  local printed
  printed="$("$1" --version 2>/dev/null || true)"
  [[ "$printed" == *"$2"* ]]
}

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Rust comes from rustup (the wasm target is added through it); nothing else can
# install it for us. Said first and plainly, before anything is changed.
if ! command -v cargo >/dev/null 2>&1 || ! command -v rustup >/dev/null 2>&1; then
  say "Rust is missing: install it with rustup first (https://rustup.rs), for example"
  say "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y && . \"\$HOME/.cargo/env\""
  say "then run this again (Rust 1.87 or newer)."
  return 1 2>/dev/null || exit 1
fi
if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null 2>&1; then
  say "packages are installed with apt-get: run this as root or install sudo"
  return 1 2>/dev/null || exit 1
fi
# A C toolchain, for the crates cargo installs below (and OpenSSL's headers,
# which trunk builds against).
if ! command -v cc >/dev/null 2>&1 || ! command -v pkg-config >/dev/null 2>&1 \
  || ! dpkg -s libssl-dev >/dev/null 2>&1; then
  say "installing build-essential, pkg-config and libssl-dev from Debian"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq build-essential pkg-config libssl-dev >/dev/null
fi
if ! command -v npm >/dev/null 2>&1; then
  say "installing Node.js and npm from Debian (for wasm-opt)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq nodejs npm >/dev/null
fi

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  say "installing chromium and chromium-driver from Debian"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium chromium-driver >/dev/null
fi

if [ ! -x /usr/bin/firefox-esr ] || ! dpkg -s mesa-vulkan-drivers >/dev/null 2>&1; then
  say "installing firefox-esr and mesa-vulkan-drivers (lavapipe) from Debian"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq firefox-esr mesa-vulkan-drivers >/dev/null
fi

# Xvfb: the end-to-end test that kills Firefox's GPU process runs Firefox
# headful (a GPU process is only started for a real display).
if ! command -v Xvfb >/dev/null 2>&1; then
  say "installing xvfb from Debian"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq xvfb >/dev/null
fi

if ! has_version "$GECKODRIVER" "geckodriver $GECKODRIVER_VERSION"; then
  say "installing geckodriver $GECKODRIVER_VERSION (about 2 minutes)"
  cargo install -q geckodriver --version "$GECKODRIVER_VERSION" --locked
fi

# wasm-bindgen-test-runner serves the test page with tiny_http 0.12.0, whose
# task pool can strand a request: two connections accepted together both see
# one idle thread, only one is woken, and the other waits with no thread
# while the busy ones block on idle keep-alive connections. Chromium opens six
# at once, so on a machine with few cores the page hangs at "Loading
# scripts..." until a connection closes (minutes). The runner is built with a
# one-line fix (a new thread whenever the idle threads are all spoken for),
# applied to tiny_http's own source from the registry; a stamp says so.
CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
RUNNER_STAMP="$CARGO_BIN/.wasm-bindgen-cli-$WASM_BINDGEN_VERSION-tiny-http-fixed"
if ! has_version wasm-bindgen " $WASM_BINDGEN_VERSION" || [ ! -f "$RUNNER_STAMP" ]; then
  say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION with tiny_http's task-pool fix (about 2 minutes)"
  fetch="$ROOT/target/tiny-http-source"
  mkdir -p "$fetch/src"
  printf '[package]\nname = "tiny-http-source"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\ntiny_http = "=0.12.0"\n\n[workspace]\n' > "$fetch/Cargo.toml"
  : > "$fetch/src/lib.rs"
  cargo fetch -q --manifest-path "$fetch/Cargo.toml"
  source_dir=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/tiny_http-0.12.0 | head -n 1)
  patched="$ROOT/target/tiny_http-0.12.0-fixed"
  rm -rf "$patched"
  cp -r "$source_dir" "$patched"
  sed -i 's/if self.sharing.waiting_tasks.load(Ordering::Acquire) == 0 {/if self.sharing.waiting_tasks.load(Ordering::Acquire) <= queue.len() {/' \
    "$patched/src/util/task_pool.rs"
  grep -q 'waiting_tasks.load(Ordering::Acquire) <= queue.len()' "$patched/src/util/task_pool.rs"
  # No --locked: one transitive version of its lock file is missing from the registry.
  if ! cargo install -q --force wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" \
    --config "patch.crates-io.tiny_http.path=\"$patched\"" > "$ROOT/target/wasm-bindgen-install.log" 2>&1; then
    cat "$ROOT/target/wasm-bindgen-install.log" >&2
    return 1 2>/dev/null || exit 1
  fi
  touch "$RUNNER_STAMP"
fi

if ! has_version trunk " $TRUNK_VERSION"; then
  say "installing trunk $TRUNK_VERSION (about 6 minutes)"
  cargo install -q trunk --version "$TRUNK_VERSION" --locked
fi

LOCAL_WASM_OPT="$ROOT/.tools/node_modules/.bin/wasm-opt"
if ! has_version "$LOCAL_WASM_OPT" "version $BINARYEN_VERSION"; then
  say "installing wasm-opt (binaryen $BINARYEN_VERSION from npm)"
  mkdir -p "$ROOT/.tools"
  npm install --prefix "$ROOT/.tools" --no-audit --no-fund --silent "binaryen@$BINARYEN_VERSION"
fi
# Next to trunk, so that a plain `trunk serve` / `trunk build --release` in any
# shell finds it (trunk is offline and never downloads it). A working link of the
# same version (another checkout's) is left as it is.
if ! has_version "$CARGO_BIN/wasm-opt" "version $BINARYEN_VERSION"; then
  ln -sf "$LOCAL_WASM_OPT" "$CARGO_BIN/wasm-opt"
fi

if [ ! -f "$ROOT/www/scene.bin" ]; then
  (cd "$ROOT" && cargo run -q --example make_scene)
fi

eval "$SETUP_SAVED_OPTIONS"
