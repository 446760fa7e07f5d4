# check --json on the real PREEMPT_RT kernel, with the guest's own files recorded beside it.
. "$HOOK/common.sh"
install_package
facts
rec check rmp-eval check --json
