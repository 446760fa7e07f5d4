# The GRUB layout issue 9 is about, through a real update-grub and a real boot through GRUB: /etc/default/grub a
# symbolic link, a quoted parameter with a space, a drop-in that sorts after 99-rmp-eval.cfg and replaces
# GRUB_CMDLINE_LINUX_DEFAULT. fix → reboot → the managed parameters once, the user's intact → rollback → reboot →
# the files byte-identical, the command line as before fix.
. "$HOOK/common.sh"

# The layout's files as bytes (the link as its target name), modes and owners, into this boot's $1/.
layout() {
    d=$B/$1
    mkdir -p "$d/grub.d"
    readlink /etc/default/grub >"$d/grub.link" 2>&1
    cp /etc/default/grub.real "$d/grub.real"
    cp -a /etc/default/grub.d/. "$d/grub.d/"
    cp /boot/grub/grub.cfg "$d/grub.cfg"
    stat -c '%a %u %g %F %n' /etc/default/grub /etc/default/grub.real /etc/default/grub.d /etc/default/grub.d/* \
        >"$d/modes"
}

case $BOOT in
1)
    install_package
    facts
    mv /etc/default/grub /etc/default/grub.real
    ln -s grub.real /etc/default/grub
    # GRUB_CMDLINE_LINUX="…" gets rmp.note="a b" (escaped quotes, as a user writes them).
    sed -i 's/^GRUB_CMDLINE_LINUX="\(.*\)"$/GRUB_CMDLINE_LINUX="\1 rmp.note=\\"a b\\""/' /etc/default/grub.real
    printf '# sorts after 99-rmp-eval.cfg\nGRUB_CMDLINE_LINUX_DEFAULT="rmp.zzz=1"\n' >/etc/default/grub.d/99-zzz.cfg
    rec setup update-grub
    layout pre
    rec fix rmp-eval fix --core 1 --only cmdline --yes --no-measure
    layout after-fix
    reboot_after_this_boot
    ;;
2)
    facts
    rec check rmp-eval check --json --core 1
    rec rollback rmp-eval rollback --yes
    layout after-rollback
    reboot_after_this_boot
    ;;
3)
    facts
    layout final
    ;;
esac
