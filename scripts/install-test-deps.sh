#!/bin/sh
# Installs the real peers the integration tests compare memdoctor against
# (Debian packages). Safe to run repeatedly; does nothing when all are present.
# Without root or apt-get it only lists what is missing: the tests that need a
# missing peer skip and say why.
set -u
need=""
have() { command -v "$1" >/dev/null 2>&1; }
have smem || need="$need smem"
have prometheus-node-exporter || need="$need prometheus-node-exporter"
have promtool && have prometheus || need="$need prometheus"
# VictoriaMetrics: the second engine of the fleet scan (cmd/memdoctor/fleet_victoria_test.go).
have victoria-metrics || need="$need victoria-metrics"
have stress-ng || need="$need stress-ng"
# curl: the recorder's socket and TLS, asked by another user (record_access_test.go).
have curl || need="$need curl"
have ruby || need="$need ruby"
# strace: the test that check opens each file once (check_opens_test.go), and bench/check.sh.
have strace || need="$need strace"
have gcc || need="$need gcc"
# C extensions of the heap profile tests: the interpreters' headers.
have python3 && python3 -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' 2>/dev/null || need="$need python3-dev"
have ruby && [ -e "$(ruby -rrbconfig -e 'print RbConfig::CONFIG["rubyhdrdir"]' 2>/dev/null)/ruby.h" ] || need="$need ruby-dev"
have javac || need="$need openjdk-17-jdk-headless"
have node || need="$need nodejs"
/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null || need="$need python3-prometheus-client"
have chromium || have chromium-browser || need="$need chromium"
[ -e /usr/include/librdkafka/rdkafka.h ] || need="$need librdkafka-dev"
[ -e /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 ] || [ -e /usr/lib/aarch64-linux-gnu/libjemalloc.so.2 ] || need="$need libjemalloc2"
# PostgreSQL and pgbench: backends the arena rule must not judge (arenas_postgres_test.go).
ls /usr/lib/postgresql/*/bin/pgbench >/dev/null 2>&1 || need="$need postgresql"
# Allocators other than glibc's, and a server linked with jemalloc.
[ -e /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 ] || [ -e /usr/lib/aarch64-linux-gnu/libtcmalloc_minimal.so.4 ] || need="$need libtcmalloc-minimal4"
have redis-server && have redis-cli || need="$need redis-server"
[ -e /usr/lib/x86_64-linux-gnu/libmimalloc.so.2 ] || [ -e /usr/lib/aarch64-linux-gnu/libmimalloc.so.2 ] || need="$need libmimalloc2.0"
# A seccomp filter compiled as container runtimes compile theirs.
[ -e /usr/lib/x86_64-linux-gnu/libseccomp.so.2 ] || [ -e /usr/lib/aarch64-linux-gnu/libseccomp.so.2 ] || need="$need libseccomp2"
# --- packaging (make deb and its test): Debian's own tools -------------------
have dpkg-deb || need="$need dpkg"
have lintian || need="$need lintian"
have man || need="$need man-db"
have objdump || need="$need binutils"
# --- end of packaging ---------------------------------------------------------
# --- kernel lab (lab/): qemu, a static busybox, cpio and e2fsprogs build and
# read the guest; Debian's 6.1 kernel is fetched into the user's cache dir
# (lab/fetch-kernel.sh) after the packages, below.
have qemu-system-x86_64 || need="$need qemu-system-x86"
# ldd fails on a static executable: the guest has no libc for busybox.
have busybox && ! ldd "$(command -v busybox)" >/dev/null 2>&1 || need="$need busybox-static"
have cpio || need="$need cpio"
have mkfs.ext4 && have debugfs || need="$need e2fsprogs"
lab_kernel() { "$(dirname "$0")/../lab/fetch-kernel.sh" >/dev/null || echo "lab: Debian's kernel could not be fetched; the lab tests will skip" >&2; }
# --- end kernel lab
# --- .NET: the Core 3.1 runtime (PyPI dotnetcore2) hosted by pythonnet in a
# venv of Debian's python3 at a fixed place (internal/dotnet's tests).
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import ensurepip' 2>/dev/null || need="$need python3-venv"
dotnet_venv() {
  v=/opt/memdoctor-test/dotnet
  "$v/bin/python" -c 'import dotnetcore2, pythonnet, clr_loader' 2>/dev/null && return 0
  { /usr/bin/python3 -m venv "$v" && "$v/bin/pip" install -q dotnetcore2==3.1.23 pythonnet==3.2.1 clr-loader==0.3.1; } >/dev/null 2>&1 ||
    echo "dotnet: the .NET runtime could not be installed in $v; the .NET tests will skip" >&2
}
# --- end .NET
# --- pyarrow: a second reader of the Parquet export, beside parquet-go
# (internal/parquet's and the store's export tests), in a venv of Debian's
# python3 at a fixed place.
pyarrow_venv() {
  v=/opt/memdoctor-test/pyarrow
  "$v/bin/python" -c 'import pyarrow.parquet' 2>/dev/null && return 0
  { /usr/bin/python3 -m venv "$v" && "$v/bin/pip" install -q pyarrow==26.0.1; } >/dev/null 2>&1 ||
    echo "pyarrow: could not be installed in $v; the Parquet tests that read with it will skip (and fail under CI)" >&2
}
# --- end pyarrow
# --- Grafana: the dashboard's types (deploy/grafana_test.go) checked by tsc
# against Grafana's schema package, both from npm at fixed versions in a
# fixed place.
have npm || need="$need npm"
grafana_schema() {
  g=/opt/memdoctor-test/grafana-schema
  [ -e "$g/node_modules/@grafana/schema/package.json" ] && [ -x "$g/node_modules/.bin/tsc" ] && return 0
  { have npm && mkdir -p "$g" && npm install --prefix "$g" --no-audit --no-fund --ignore-scripts --save-exact --loglevel=error \
      @grafana/schema@13.2.3 typescript@5.9.3; } >/dev/null 2>&1 ||
    echo "grafana: @grafana/schema and typescript could not be installed in $g; the dashboard's schema test will skip" >&2
}
# --- end Grafana
[ -z "$need" ] && { lab_kernel; dotnet_venv; pyarrow_venv; grafana_schema; exit 0; }
if [ "$(id -u)" != 0 ] || ! have apt-get; then
  echo "test peers missing (tests that need them will skip):$need" >&2
  echo "install with: sudo apt-get install -y$need" >&2
  lab_kernel
  dotnet_venv
  pyarrow_venv
  grafana_schema
  exit 0
fi
echo "installing test peers:$need" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null 2>&1 || true
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $need >/dev/null || {
  echo "apt-get install failed; tests that need:$need will skip" >&2
}
lab_kernel
dotnet_venv
pyarrow_venv
grafana_schema
exit 0
