# The image has no rt-tests: the host's cyclictest (Debian bookworm's, the guest's release) and the one library it
# needs beyond libc, into the share's tools/.
set -eu
share=$1
mkdir -p "$share/tools"
cp "$(command -v cyclictest)" "$share/tools/"
for lib in $(ldd "$(command -v cyclictest)" | awk '/libnuma/ {print $3}'); do cp "$lib" "$share/tools/"; done
