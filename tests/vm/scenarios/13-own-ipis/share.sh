# The image has no rt-tests: the host's cyclictest (Debian bookworm's, the guest's release) and the one library it
# needs beyond libc, into the share's tools/. The run's knobs for an investigation (not the benchmark's figures):
# RMP_VM_IPI_SECONDS per run (60), RMP_VM_IPI_PAIRS per kind (3), RMP_VM_IPI_KINDS (the kinds run and judged, of
# "cyclic threads nic", all by default), RMP_VM_IPI_TRACE=1 to record, with kprobes, each cross-CPU call aimed at
# CPU 1 with its sender and kernel stack (6.1 has no ipi_send_cpu event).
set -eu
share=$1
mkdir -p "$share/tools"
cp "$(command -v cyclictest)" "$share/tools/"
for lib in $(ldd "$(command -v cyclictest)" | awk '/libnuma/ {print $3}'); do cp "$lib" "$share/tools/"; done
kinds=$(printf %s "${RMP_VM_IPI_KINDS:-cyclic threads nic}" | tr -cd 'a-z ')
printf "SECS=%d\nPAIRS=%d\nTRACE=%d\nKINDS='%s'\n" "${RMP_VM_IPI_SECONDS:-60}" "${RMP_VM_IPI_PAIRS:-3}" \
    "${RMP_VM_IPI_TRACE:-0}" "$kinds" >"$share/tools/knobs"
