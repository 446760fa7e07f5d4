# Power lost ten times while qualify runs (qemu killed by the host, no shutdown, the disk honouring only what the
# guest flushed), each cut where the next boot also goes on with the qualify:
#    1  during the baseline measurement (qualify started by hand)
#    2  in a state write: the temporary written, not fsynced (the write that begins the command-line step)
#    3  in a state write: the temporary fsynced, not renamed (the write that records the armed trial)
#    4  in a state write: renamed, the directory not fsynced (the armed trial, armed again)
#    5  during the trial boot, its health check recorded (the next boot is GRUB's default: commit, then reboot)
#    6  right after the commit: its state write complete
#    7  during a runtime step's changes (fix's executor between two changes)
#    8  during the sweep's measurement
#    9  done, before the report is written (the state write complete)
#   10  during `rollback` (the qualify state already forgotten)
# then rollback again, and a last boot whose files of /etc and /boot are byte-identical to the first's.
# After a cut, GRUB (which reads the file system without replaying its journal) may not see what Linux last
# wrote in /boot: the boot after a cut near the arming is the trial or the default entry, and qualify goes on from
# either (a trial its boot skipped is booted once more).
# The cuts in state writes use the seam RMP_EVAL_TEST_PAUSE_STATE, in a build with test seams (share.sh) that
# rmp-eval-qualify.service runs through a drop-in: each state write pauses at the armed step until this script lets
# it go or cuts. Which cut comes next is kept in the share, not in the boot number: a cut in a rename may leave the
# old state, and then qualify arms its trial once more (one boot more).
. "$HOOK/common.sh"
R=/var/lib/rmp-eval
V=/var/lib/rmp-vm
PAUSE=/run/rmp-vm-pause
FIXPAUSE=/run/rmp-vm-fixpause
DROPIN=/etc/systemd/system/rmp-eval-qualify.service.d
UNIT=rmp-eval-qualify.service

hashes() {
    find /etc /boot -xdev -type f -print0 | sort -z | xargs -0 sha256sum >"$B/hashes"
    find /etc /boot -xdev -type l -printf '%p -> %l\n' | sort >"$B/links"
}
phase() {
    sed -n 's/.*"phase": *"\([a-z_]*\)".*/\1/p' $R/qualify.json 2>/dev/null | head -n 1
}
# The seams the next boots' qualify unit runs with: STEP of the state write it pauses at, and `fix` to pause
# fix's executor between two changes too. Fsynced: it must survive the cut that follows.
arm() {
    echo "RMP_EVAL_TEST_PAUSE_STATE=$1:$PAUSE" >$V/seam.env
    [ "${2:-}" = fix ] && echo "RMP_EVAL_TEST_PAUSE_FILE=$FIXPAUSE" >>$V/seam.env
    sync $V/seam.env
}
# cut K WHAT [NEXT]: the K-th power cut, here and now; the host kills qemu (the script does not return).
cut() {
    echo "$BOOT $2" >"$OUT/cut-$1"
    echo "${3:-$(($1 + 1))}" >"$OUT/next-cut"
    cp $R/qualify.json "$B/state-at-cut" 2>/dev/null
    : >"$OUT/cut$BOOT"
    sleep 600
}
unit_ended() {
    [ "$(systemctl show $UNIT -p ActiveState --value)" != activating ] &&
        [ "$(systemctl show $UNIT -p ExecMainExitTimestampMonotonic --value)" != 0 ]
}
# serve WANT [AFTER]: lets the unit's paused state writes go until one whose phase (the seam's JSON) matches the
# regex WANT (after one that matched AFTER, when given): returns 0 with it paused. The first pause of the boot is
# the unit writing the state it found, copied to state-found; each pause's state file is kept (the previous one is
# the old state of the next write). Returns 1 when the unit ended first.
serve() {
    after=${2:-}
    for _ in $(seq 3000); do
        if [ -s $PAUSE ]; then
            [ -e "$B/state-found" ] || cp $R/qualify.json "$B/state-found"
            cp "$B/state-now" "$B/state-prev" 2>/dev/null
            cp $R/qualify.json "$B/state-now"
            cat $PAUSE >>"$B/pauses"
            echo >>"$B/pauses"
            if [ -z "$after" ] && grep -Eq "$1" $PAUSE; then return 0; fi
            [ -n "$after" ] && grep -Eq "$after" $PAUSE && after=""
            rm -f $PAUSE
        elif [ -e $FIXPAUSE ] && [ "$1" = fix ]; then
            return 0
        elif [ -e $FIXPAUSE ]; then
            rm -f $FIXPAUSE
        elif unit_ended; then
            return 1
        fi
        sleep 0.2
    done
    return 1
}
# Lets every pause go until the unit has ended.
serve_to_end() {
    serve '^$' || true
    systemctl show $UNIT -p ActiveState -p Result -p ExecMainStatus >"$B/qualify-unit" 2>&1
}
# The qualify's RT thread runs (SCHED_FIFO): a measurement is under way.
measuring() {
    for _ in $(seq 600); do
        ps -eLo cls=,comm= | grep -Eq '^ *FF +rmp-eval' && return 0
        sleep 0.2
    done
    return 1
}

facts
ls -A $R >"$B/rmp-eval-files" 2>/dev/null
next=$(cat "$OUT/next-cut" 2>/dev/null || echo 1)
echo "$next" >"$B/next-cut"
[ "$next" = final ] || reboot_after_this_boot
may_reboot_by_itself
case $next in
1)
    install_package
    # The kernel prints its command line on the console without `quiet`: the judge reads every boot's line
    # there.
    sed -i 's/^GRUB_CMDLINE_LINUX_DEFAULT=.*/GRUB_CMDLINE_LINUX_DEFAULT=""/' /etc/default/grub
    rec update-grub update-grub
    sync
    hashes
    mkdir -p $V $DROPIN
    cp "$HOOK/rmp-eval-seams" /usr/local/sbin/
    printf '[Service]\nEnvironmentFile=-%s/seam.env\nExecStart=\nExecStart=/usr/local/sbin/rmp-eval-seams qualify --resume\n' \
        $V >$DROPIN/zz-vm-seam.conf
    arm written
    sync
    rmp-eval qualify --core 1 --seconds 3 --periods 1000 --yes >"$B/qualify" 2>&1 &
    for _ in $(seq 600); do [ "$(phase)" = baseline ] && break; sleep 0.2; done
    measuring
    cut 1 "baseline measurement"
    ;;
2)
    serve '"stage":"applying","journals":[0-9]' && { arm synced; cut 2 "write: written"; }
    ;;
3)
    serve '"stage":"trial_armed"' && { arm renamed; cut 3 "write: synced"; }
    ;;
4)
    serve '"stage":"trial_armed"' && { arm dir_synced; cut 4 "write: renamed"; }
    ;;
5)
    serve '"stage":"trial_booted"' && { arm dir_synced; cut 5 "trial boot, its health check recorded"; }
    ;;
6)
    # The first state write after the commit's journal count: the commit is written and recorded.
    serve '.' '"stage":"committing","journals":[0-9]' && { arm written fix; cut 6 "write: dir_synced, after the commit"; }
    ;;
7)
    if serve fix; then
        arm written
        cut 7 "fix executor between two changes"
    fi
    ;;
8)
    serve '"phase":"sweep"' && rm -f $PAUSE
    if measuring; then
        arm dir_synced
        cut 8 "sweep measurement"
    fi
    ;;
9)
    serve '"phase":"done"' && { arm written; cut 9 "write: dir_synced, done before the report"; }
    ;;
10)
    serve_to_end
    cp $R/qualify.json "$B/state.json"
    mkdir -p "$B/qualification"
    cp $R/qualification/*.json "$B/qualification/" 2>/dev/null
    rec status rmp-eval qualify --status
    # The scenario's drop-in goes: the files are to be as at the start.
    rm -rf $DROPIN $V
    systemctl daemon-reload
    sync
    rmp-eval rollback --yes >"$B/rollback" 2>&1 &
    for _ in $(seq 3000); do [ -e $R/qualify.json ] || break; sleep 0.05; done
    cut 10 "rollback"
    ;;
11)
    rec status rmp-eval qualify --status
    rec rollback rmp-eval rollback --yes
    echo final >"$OUT/next-cut"
    ;;
final)
    hashes
    ;;
esac
