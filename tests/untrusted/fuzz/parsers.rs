//! Property tests (proptest) over every parser in src/parse, from a fixed seed corpus of real captures mutated
//! at random: no panic, no hang, errors one clean short line, and garbage never parsed into a confident answer
//! where the checks would turn it into a pass. CI runs a fixed number of cases from a fixed seed; tests/untrusted/mod.rs says
//! how to run longer (RMP_FUZZ_CASES, RMP_FUZZ_SEED).

use super::{clean_line, config, mutated, run};
use proptest::prelude::*;
use rmp_eval::parse::{
    cgroup, cmdline, cpuinfo, cpulist, hwlat, interrupts, kernel, mask, netaddr, route, swaps,
    task, text,
};

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/samples");
const QEMU: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/debian12-rt-qemu-isolated"
);

fn corpus(files: &[&str]) -> Vec<String> {
    files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{f}: {e}")))
        .collect()
}

/// Kernel CPU-list material: what sysfs prints and what people write on the command line.
fn cpulists() -> Vec<String> {
    [
        "0-1\n",
        "(null)\n",
        "\n",
        "1, 3-4 ,7",
        "0-9:2/5",
        "0-1023:2/256",
        "all",
        "2-N",
        "1,,2",
        "0-8191",
        "all:1/2",
        "N",
        "007",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn cpulist_parse() {
    run("cpulist", mutated(cpulists()), |s| {
        for nr in [None, Some(1), Some(4), Some(8192)] {
            match cpulist::parse_for(&s, nr) {
                Ok(v) => {
                    let max = nr.unwrap_or(cpulist::NR_CPUS_MAX);
                    prop_assert!(v.windows(2).all(|w| w[0] < w[1]), "not sorted: {v:?}");
                    prop_assert!(v.iter().all(|&c| c < max), "{v:?} beyond {max}");
                    // What the kernel prints reads back the same.
                    prop_assert_eq!(cpulist::parse(&cpulist::format(&v)).unwrap(), v);
                }
                Err(e) => clean_line(&e.to_string())?,
            }
        }
        Ok(())
    });
}

#[test]
fn mask_parse() {
    let seeds = [
        "3\n",
        "00,00000108",
        "ff,00000000",
        "0\n",
        "f",
        "1,00000000",
    ];
    run(
        "mask",
        mutated(seeds.iter().map(|s| s.to_string()).collect()),
        |s| {
            match mask::parse(&s) {
                // A mask that parses came from hex digits: empty text never does (it is not "no CPUs").
                Ok(v) => {
                    prop_assert!(!s.trim().is_empty());
                    prop_assert!(v.iter().all(|&c| c <= cpulist::MAX_CPU));
                }
                Err(e) => clean_line(&e.to_string())?,
            }
            Ok(())
        },
    );
}

#[test]
fn interrupts_parse() {
    let seeds = corpus(&[
        &format!("{SAMPLES}/interrupts-debian12-rt-qemu-isolated.txt"),
        &format!("{SAMPLES}/interrupts-firecracker-vm-2cpu.txt"),
        &format!("{SAMPLES}/interrupts-rpi4-arm64-handmade.txt"),
    ]);
    run("interrupts", mutated(seeds), |s| {
        match interrupts::parse(&s) {
            Ok(i) => {
                prop_assert!(!i.cpus.is_empty() && i.rows.len() <= interrupts::MAX_ROWS);
                for r in &i.rows {
                    prop_assert!(r.counts.len() <= i.cpus.len());
                    let _ = (r.irq(), r.actions());
                }
            }
            Err(e) => clean_line(&e.to_string())?,
        }
        Ok(())
    });
}

#[test]
fn cpuinfo_parse() {
    let seeds = corpus(&[
        &format!("{SAMPLES}/cpuinfo-debian12-rt-qemu.txt"),
        &format!("{SAMPLES}/cpuinfo-rpi4-arm64-handmade.txt"),
    ]);
    run("cpuinfo", mutated(seeds), |s| {
        if let Some(m) = cpuinfo::model(&s) {
            prop_assert!(
                m.chars().count() <= cpuinfo::MODEL_MAX + 1,
                "{} chars",
                m.len()
            );
        }
        let _ = (
            cpuinfo::processors(&s),
            cpuinfo::mhz(&s, 1),
            cpuinfo::guess_arch(&s),
        );
        Ok(())
    });
}

#[test]
fn cmdline_and_kernel_parse() {
    let seeds = corpus(&[
        &format!("{QEMU}/proc/cmdline"),
        &format!("{QEMU}/proc/sys/kernel/osrelease"),
    ]);
    run("cmdline", mutated(seeds), |s| {
        let p = cmdline::parse(&s);
        let _ = cmdline::get(&p, "rcu_nocbs").map(cmdline::isolcpus_list);
        let _ = kernel::version(&s);
        let _ = kernel::config(&s, "CONFIG_PREEMPT_RT");
        Ok(())
    });
}

#[test]
fn task_swaps_route_netaddr_cgroup_parse() {
    let seeds = corpus(&[
        &format!("{QEMU}/proc/1/task/1/stat"),
        &format!("{QEMU}/proc/1/task/1/status"),
        &format!("{QEMU}/proc/swaps"),
        &format!("{SAMPLES}/fib_trie-firecracker-vm.txt"),
    ]);
    run("proc files", mutated(seeds), |s| {
        if let Some(t) = task::parse_stat(&s) {
            // The thread id is the line's first field, the name what the parentheses hold.
            prop_assert!(s.trim_start().starts_with(&t.tid.to_string()), "{}", t.tid);
            let named = format!("({})", t.comm);
            prop_assert!(s.contains(&named), "{}", named);
        }
        let _ = task::allowed_list(&s).map(cpulist::parse);
        if let Err(e) = swaps::parse(&s) {
            clean_line(&e.to_string())?;
        }
        let routes = route::v4_routes(&s).unwrap_or_default();
        for r in [route::v4_default_ifaces(&s), route::v6_default_ifaces(&s)] {
            if let Err(e) = r {
                clean_line(&e.to_string())?;
            }
        }
        let locals = netaddr::fib_local_v4(&s).unwrap_or_default();
        let _ = (
            netaddr::v6_count(&s, "eth0"),
            netaddr::v4_count(&locals, &routes, "eth0"),
        );
        let _ = (
            cgroup::cgroup2_mount(&s),
            cgroup::has_controller(&s, "cpuset"),
        );
        let _ = cgroup::PartitionState::parse(&s);
        Ok(())
    });
}

/// The hwlat tracer's lines: the Linux 6.1 format of trace_hwlat_print (kernel/trace/trace_output.c) printed by
/// hand behind trace_pipe's prefix — no machine here has the tracer to capture from — with and without the NMI
/// fields, a 5.x line without `count:`, and the `trace` file's header. A gap is only ever read from a line that
/// says so, with its figures where the format puts them.
#[test]
fn hwlat_parse() {
    let seeds = vec![
        "           <...>-1453    [001] dn...   123.456789: #1     inner/outer(us):   19/26    \
         ts:1700000000.123456789 count:3 nmi-total:4 nmi-count:1\n"
            .to_string(),
        "   hwlatd-220     [000] d....  5321.000100: #12    inner/outer(us):  212/0      \
         ts:1700000042.000000001 count:1\n"
            .to_string(),
        " kworker/0:1-77 [003] ....   88.5: #123456 inner/outer(us): 10/11    ts:1600000000.900000000\n".to_string(),
        "# tracer: hwlat\n#\n".to_string(),
    ];
    run("hwlat", mutated(seeds), |s| {
        for line in s.lines() {
            if let hwlat::Parsed::Gap(g) = hwlat::parse_line(line) {
                for says in [": #", "inner/outer(us):", "ts:", "[", "]"] {
                    prop_assert!(line.contains(says), "{line}: no {says:?}");
                }
                prop_assert!(g.ts_ns < 1_000_000_000, "{line}");
            }
        }
        Ok(())
    });
}

#[test]
fn sanitize_is_clean_and_bounded() {
    run(
        "sanitize",
        mutated(vec!["a\x1b[2Jb\nc".into(), "plain".into()]),
        |s| {
            let out = text::sanitize(&s, 40);
            prop_assert!(out.chars().count() <= 41);
            prop_assert!(!out.chars().any(char::is_control), "{out:?}");
            Ok(())
        },
    );
}

#[test]
fn seeds_and_config_are_fixed() {
    // The CI run is reproducible: same seed, same number of cases unless asked otherwise.
    let c = config();
    assert!(c.cases >= 1);
}
