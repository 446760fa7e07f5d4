. "$HOOK/common.sh"
exec >"$B/probe.log" 2>&1
set -x
grep cgroup /proc/mounts
cat /sys/fs/cgroup/cgroup.controllers /sys/fs/cgroup/cgroup.subtree_control
ls /sys/fs/cgroup/
cat /sys/fs/cgroup/cpuset.cpus.effective /sys/fs/cgroup/cpuset.cpus.isolated
cat /sys/fs/cgroup/system.slice/cpuset.cpus /sys/fs/cgroup/system.slice/cpuset.cpus.partition
ls /run/systemd/system >/dev/null && echo systemd-pid1
printf '[Unit]\nDescription=probe\n[Slice]\nAllowedCPUs=1\n' > /etc/systemd/system/rmp-eval-rt.slice
systemctl daemon-reload
systemctl start rmp-eval-rt.slice; echo start=$?
systemctl is-active rmp-eval-rt.slice
cat /sys/fs/cgroup/cgroup.subtree_control
ls /sys/fs/cgroup/rmp-eval-rt.slice
for f in cpuset.cpus cpuset.cpus.effective cpuset.cpus.partition cgroup.type; do echo "$f: $(cat /sys/fs/cgroup/rmp-eval-rt.slice/$f)"; done
echo isolated > /sys/fs/cgroup/rmp-eval-rt.slice/cpuset.cpus.partition; echo write=$?
cat /sys/fs/cgroup/rmp-eval-rt.slice/cpuset.cpus.partition
cat /sys/fs/cgroup/cpuset.cpus.effective
for s in system.slice user.slice init.scope; do echo "$s: $(cat /sys/fs/cgroup/$s/cpuset.cpus.effective)"; done
cat /sys/devices/system/cpu/isolated
sh -c 'while :; do :; done' & pid=$!
sh -c 'while :; do :; done' & pid2=$!
for i in $(seq 15); do echo "p $(cut -d' ' -f39 /proc/$pid/stat) $(cut -d' ' -f39 /proc/$pid2/stat)"; sleep 0.3; done
kill $pid $pid2
echo $$ > /sys/fs/cgroup/rmp-eval-rt.slice/cgroup.procs; echo move=$?
grep Cpus_allowed_list /proc/self/status
sh -c 'while :; do :; done' & pid3=$!
for i in $(seq 5); do echo "in $(cut -d' ' -f39 /proc/$pid3/stat)"; sleep 0.3; done
kill $pid3
echo $$ > /sys/fs/cgroup/cgroup.procs; echo back=$?
systemctl daemon-reload
cat /sys/fs/cgroup/rmp-eval-rt.slice/cpuset.cpus.partition
systemctl status rmp-eval-rt.slice --no-pager | head -5
# invalid: a sibling claims the core
echo 0-1 > /sys/fs/cgroup/system.slice/cpuset.cpus; echo sib=$?
cat /sys/fs/cgroup/rmp-eval-rt.slice/cpuset.cpus.partition
echo > /sys/fs/cgroup/system.slice/cpuset.cpus
cat /sys/fs/cgroup/rmp-eval-rt.slice/cpuset.cpus.partition
echo member > /sys/fs/cgroup/rmp-eval-rt.slice/cpuset.cpus.partition; echo member=$?
cat /sys/fs/cgroup/rmp-eval-rt.slice/cpuset.cpus.partition /sys/fs/cgroup/cpuset.cpus.effective
echo isolated > /sys/fs/cgroup/rmp-eval-rt.slice/cpuset.cpus.partition
systemctl stop rmp-eval-rt.slice; echo stop=$?
ls -d /sys/fs/cgroup/rmp-eval-rt.slice; cat /sys/fs/cgroup/cpuset.cpus.effective
rm /etc/systemd/system/rmp-eval-rt.slice; systemctl daemon-reload
mkdir -p $B/cap; cp /proc/mounts $B/cap/mounts
