//! Generated machine trees for `--root`: the captured Debian 12 PREEMPT_RT guest (tests/fixtures/
//! debian12-rt-qemu-isolated, a real capture) scaled to any number of CPUs, IRQs and threads. Per-CPU, per-IRQ
//! and per-thread files follow the capture's own files (its stat and status lines, its interrupt rows), with
//! the numbers changed; everything else is copied unchanged. The last CPU is the isolated RT core, as in the
//! capture. Used by the tests of tests/untrusted/ and by bench/untrusted.sh (through examples/gen_machine.rs).

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::Path;

pub struct Machine {
    pub cpus: usize,
    pub irqs: usize,
    pub threads: usize,
}

const SOURCE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/debian12-rt-qemu-isolated"
);

fn skipped(rel: &str) -> bool {
    let num = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let parts: Vec<&str> = rel.split('/').collect();
    match parts.as_slice() {
        ["proc", p, ..] if num(p) => true,
        ["proc", "irq", n, ..] if num(n) => true,
        ["proc", "interrupts"] => true,
        ["sys", "devices", "system", "cpu", c, ..] => {
            c.strip_prefix("cpu").is_some_and(num)
                || ["online", "present", "possible", "isolated", "nohz_full"].contains(c)
        }
        _ => false,
    }
}

fn copy_tree(from: &Path, to: &Path, rel: &str) -> io::Result<()> {
    for e in fs::read_dir(from)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        let r = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if skipped(&r) {
            continue;
        }
        let t = e.file_type()?;
        let dst = to.join(&name);
        if t.is_dir() {
            fs::create_dir_all(&dst)?;
            copy_tree(&e.path(), &dst, &r)?;
        } else if t.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(e.path())?, &dst)?;
        } else {
            fs::copy(e.path(), &dst)?;
        }
    }
    Ok(())
}

pub fn write(root: &Path, rel: &str, text: &str) -> io::Result<()> {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap())?;
    fs::write(p, text)
}

/// Writes the machine under `root` (which must exist).
pub fn generate(root: &Path, m: &Machine) -> io::Result<()> {
    assert!(m.cpus >= 2, "a machine with an RT core has at least 2 CPUs");
    copy_tree(Path::new(SOURCE), root, "")?;
    let n = m.cpus;
    let last = n - 1;
    let all = format!("0-{last}\n");
    let house = if n == 2 {
        "0".to_string()
    } else {
        format!("0-{}", n - 2)
    };
    let cpu = "sys/devices/system/cpu";
    for f in ["online", "present", "possible"] {
        write(root, &format!("{cpu}/{f}"), &all)?;
    }
    write(root, &format!("{cpu}/isolated"), &format!("{last}\n"))?;
    write(root, &format!("{cpu}/nohz_full"), &format!("{last}\n"))?;
    write(
        root,
        "proc/cmdline",
        &format!(
            "root=UUID=fd86818c-a252-498d-af5e-91c50de4441f ro console=ttyS0,115200 isolcpus={last} \
             nohz_full={last} rcu_nocbs={last} irqaffinity={house}\n"
        ),
    )?;
    for c in 0..n {
        let d = format!("{cpu}/cpu{c}");
        write(
            root,
            &format!("{d}/topology/thread_siblings_list"),
            &format!("{c}\n"),
        )?;
        write(
            root,
            &format!("{d}/topology/core_cpus_list"),
            &format!("{c}\n"),
        )?;
        write(root, &format!("{d}/topology/core_id"), &format!("{c}\n"))?;
        write(
            root,
            &format!("{d}/cpufreq/scaling_governor"),
            "performance\n",
        )?;
        for f in ["scaling_cur_freq", "scaling_min_freq", "scaling_max_freq"] {
            write(root, &format!("{d}/cpufreq/{f}"), "2400000\n")?;
        }
        for (s, name, lat) in [(0, "POLL", 0), (1, "C1", 1)] {
            write(
                root,
                &format!("{d}/cpuidle/state{s}/name"),
                &format!("{name}\n"),
            )?;
            write(
                root,
                &format!("{d}/cpuidle/state{s}/latency"),
                &format!("{lat}\n"),
            )?;
            write(root, &format!("{d}/cpuidle/state{s}/disable"), "0\n")?;
        }
    }
    interrupts(root, m, &house)?;
    threads(root, m, &house)
}

/// /proc/interrupts with `irqs` device rows (IRQ i fired on CPU i mod (n-1), never on the RT core), the
/// capture's per-CPU rows, and /proc/irq/N routed to the housekeeping CPUs.
fn interrupts(root: &Path, m: &Machine, house: &str) -> io::Result<()> {
    let n = m.cpus;
    let mut t = String::with_capacity(m.irqs * n * 11 + 4096);
    t.push_str("     ");
    for c in 0..n {
        let _ = write!(t, "      CPU{c:<4}");
    }
    t.push('\n');
    for i in 0..m.irqs {
        let _ = write!(t, "{i:>4}:");
        for c in 0..n {
            let v = if c == i % (n - 1) { 1000 + i } else { 0 };
            let _ = write!(t, " {v:>10}");
        }
        let _ = writeln!(t, "   IO-APIC {i}-edge      dev{i}");
        let d = format!("proc/irq/{i}");
        write(
            root,
            &format!("{d}/smp_affinity_list"),
            &format!("{house}\n"),
        )?;
        write(
            root,
            &format!("{d}/effective_affinity_list"),
            &format!("{}\n", i % (n - 1)),
        )?;
    }
    for (name, desc) in [
        ("LOC", "Local timer interrupts"),
        ("CAL", "Function call interrupts"),
    ] {
        let _ = write!(t, "{name}:");
        for _ in 0..n {
            t.push_str("        100");
        }
        let _ = writeln!(t, "   {desc}");
    }
    t.push_str("ERR:          0\nMIS:          0\n");
    write(root, "proc/interrupts", &t)
}

/// `threads` threads in processes of up to 8, allowed on the housekeeping CPUs, with the capture's stat and
/// status lines (systemd's) as the template.
fn threads(root: &Path, m: &Machine, house: &str) -> io::Result<()> {
    let stat = fs::read_to_string(Path::new(SOURCE).join("proc/1/task/1/stat"))?;
    let status = fs::read_to_string(Path::new(SOURCE).join("proc/1/task/1/status"))?;
    let fields: Vec<&str> = stat.split_whitespace().collect();
    let status: String = status
        .lines()
        .map(|l| {
            if l.starts_with("Cpus_allowed_list:") {
                format!("Cpus_allowed_list:\t{house}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let mut made = 0;
    let mut pid = 1000;
    while made < m.threads {
        let comm = format!("worker{pid}");
        write(root, &format!("proc/{pid}/comm"), &format!("{comm}\n"))?;
        for k in 0..8.min(m.threads - made) {
            let tid = pid + k;
            let mut f: Vec<String> = fields.iter().map(|s| s.to_string()).collect();
            f[0] = tid.to_string();
            f[1] = format!("({comm})");
            f[38] = (tid % (m.cpus - 1)).to_string();
            let d = format!("proc/{pid}/task/{tid}");
            write(root, &format!("{d}/stat"), &(f.join(" ") + "\n"))?;
            write(root, &format!("{d}/status"), &status)?;
            write(root, &format!("{d}/comm"), &format!("{comm}\n"))?;
            made += 1;
        }
        pid += 8;
    }
    Ok(())
}
