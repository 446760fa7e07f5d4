#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian 12 machine (run as root). Idempotent.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
# The arm64 package: dpkg-shlibdeps computes its Depends from the arm64 libc (multiarch), and qemu runs it.
dpkg --add-architecture arm64
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends libc6:arm64 libgcc-s1:arm64 apt-utils python3 >/dev/null
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    rt-tests tshark iproute2 iputils-ping ethtool procps \
    debhelper dpkg-dev fakeroot lintian man-db \
    reprepro gnupg xz-utils \
    debootstrap gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static binfmt-support \
    cmake python3-venv python3-dev gcc libc6-dev >/dev/null
# diffoscope-minimal: says what differs when the package does not reproduce (tests/package/reproducible.sh).
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends diffoscope-minimal >/dev/null
# clang: build.rs compiles the XDP program of `run --path af_xdp` (BPF bytecode, the same for amd64 and arm64).
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends clang >/dev/null
# chromium: opens the HTML report headless (tests/report.rs); stress-ng: run --load (tests/run/load.rs).
apt-get install -y -qq --no-install-recommends chromium stress-ng >/dev/null
# zsh, fish and bash-completion: the generated completions are exercised in the real shells (tests/cli/completion.rs).
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends zsh fish bash-completion >/dev/null
# Prometheus textfiles (tests/fleet/prometheus.rs): promtool comes with the prometheus package, and a real node exporter
# serves the files; systemd-analyze (tests/fleet/systemd_units.rs) verifies the units. Ansible runs the fleet playbook in
# contrib/ansible (tests/package/ansible.sh).
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends prometheus prometheus-node-exporter ansible systemd >/dev/null
# pysoem (PyPI, bundles SOEM): the independent EtherCAT MainDevice of tests/nic/, in its own venv.
PYSOEM_VENV="${RMP_EVAL_PYSOEM_VENV:-/var/cache/rmp-eval-tests/pysoem-venv}"
if ! "$PYSOEM_VENV/bin/python" -c 'import pysoem' 2>/dev/null; then
    /usr/bin/python3 -m venv "$PYSOEM_VENV"
    "$PYSOEM_VENV/bin/pip" install -q pysoem >/dev/null
fi
# hdrhistogram (PyPI, module hdrh): HdrHistogram's reference Python library, which reads the stored histograms and
# interval logs in tests/run/histograms.rs, in its own venv.
HDRH_VENV="${RMP_EVAL_HDRH_VENV:-/var/cache/rmp-eval-tests/hdrh-venv}"
if ! "$HDRH_VENV/bin/python" -c 'import hdrh' 2>/dev/null; then
    /usr/bin/python3 -m venv "$HDRH_VENV"
    "$HDRH_VENV/bin/pip" install -q hdrhistogram >/dev/null
fi
# scipy (PyPI): an independent implementation of the Poisson and chi-square quantiles behind the tail rates, for
# tests/run/tail_rates.rs, in its own venv.
SCIPY_VENV="${RMP_EVAL_SCIPY_VENV:-/var/cache/rmp-eval-tests/scipy-venv}"
if ! "$SCIPY_VENV/bin/python" -c 'import scipy.stats' 2>/dev/null; then
    /usr/bin/python3 -m venv "$SCIPY_VENV"
    "$SCIPY_VENV/bin/pip" install -q scipy >/dev/null
fi
# spdx-tools (PyPI, pyspdxtools): an SPDX validator independent of debian/notices.py, which writes the package's SBOM,
# for tests/package/run.sh, in its own venv.
SPDX_VENV="${RMP_EVAL_SPDX_VENV:-/var/cache/rmp-eval-tests/spdx-venv}"
if ! [ -x "$SPDX_VENV/bin/pyspdxtools" ]; then
    rm -rf "$SPDX_VENV"
    /usr/bin/python3 -m venv "$SPDX_VENV"
    "$SPDX_VENV/bin/pip" install -q spdx-tools >/dev/null
fi
rustup component add clippy rustfmt >/dev/null 2>&1 || true
rustup target add aarch64-unknown-linux-gnu >/dev/null
