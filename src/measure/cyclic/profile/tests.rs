use super::*;

fn names(v: &[ThreadSpec]) -> Vec<(&str, u32, Option<u8>)> {
    v.iter()
        .map(|t| (t.name.as_str(), t.period_us, t.priority))
        .collect()
}

#[test]
fn the_profiles_are_the_documented_thread_sets() {
    assert_eq!(
        names(&Profile::Linuxcnc.threads(1000, 42, 45)),
        [("servo", 1000, Some(97)), ("base", 25, Some(98))]
    );
    assert_eq!(
        names(&Profile::LinuxcncServo.threads(500, 42, 45)),
        [("servo", 1000, Some(98))]
    );
    let rmp = Profile::Rmp.threads(500, 42, 45);
    assert_eq!(rmp.len(), 8, "RMP runs 8 threads on one CPU");
    assert_eq!(
        names(&rmp),
        [
            ("sender", 500, Some(42)),
            ("receiver", 500, Some(45)),
            ("periodic1", 1000, Some(41)),
            ("periodic2", 2500, Some(40)),
            ("periodic3", 5000, Some(39)),
            ("periodic4", 10_000, Some(38)),
            ("periodic5", 25_000, Some(37)),
            ("periodic6", 50_000, Some(36)),
        ]
    );
    assert!(rmp.iter().all(|t| t.cpu.is_none()), "all on --core");
    // Low priorities stay valid SCHED_FIFO ones; long periods stay within --thread's 1 s.
    let low = Profile::Rmp.threads(100_000, 3, 5);
    assert!(low.iter().all(|t| t.priority >= Some(1)));
    assert!(low.iter().all(|t| t.period_us <= 1_000_000));
    for p in Profile::ALL {
        assert_eq!(Profile::from_name(p.name()), Some(p));
    }
    assert_eq!(Profile::from_name("LinuxCNC"), None);
}

#[test]
fn a_given_thread_replaces_the_profile_thread_of_its_name_and_others_are_added() {
    let t = |name: &str, period_us, priority| ThreadSpec {
        name: name.to_string(),
        period_us,
        priority: Some(priority),
        cpu: None,
    };
    let given = [t("base", 50, 98), t("extra", 10_000, 20)];
    let m = merge(Profile::Linuxcnc.threads(1000, 42, 45), &given);
    assert_eq!(
        names(&m),
        [
            ("servo", 1000, Some(97)),
            ("base", 50, Some(98)),
            ("extra", 10_000, Some(20))
        ]
    );
}

/// The Raspberry Pi 4 seed (003), test 1 after 111 minutes: "Servo Thread: 164,463 nanoseconds … Base Thread:
/// 210,589 nanoseconds", on a machine with a Mesa 7I96S (hardware step generation).
#[test]
fn the_raspberry_pi_seeds_figures_read_back_as_linuxcnc_and_rmp_eval_conclude() {
    let r = reading(vec![
        JitterRow::new("servo", 1000, 164_463, None),
        JitterRow::new("base", 25, 210_589, None),
    ]);
    let soft = r.software_stepping.as_deref().unwrap();
    assert!(
        soft.starts_with("not a good candidate for software stepping")
            && soft.contains("210.589 us"),
        "{soft}"
    );
    let hard = r.hardware_stepping.as_deref().unwrap();
    assert!(
        hard.starts_with("usable with hardware step generation") && hard.contains("164.463 us"),
        "{hard}"
    );
    // rmp-eval's own bands: the servo's 164 µs is Good at 1 ms (< 2 × 125 µs), not Great; the base thread's
    // 210 µs is more than eight of its 25 µs periods: Pathetic.
    assert_eq!(r.threads[0].band, "Good");
    assert_eq!(r.threads[1].band, "Pathetic");
    // Test 3 of the seed, after Reset Statistics on a quiet machine: servo 67,333 ns, base 94,072 ns.
    let quiet = reading(vec![
        JitterRow::new("servo", 1000, 67_333, None),
        JitterRow::new("base", 25, 94_072, None),
    ]);
    assert!(
        quiet
            .software_stepping
            .as_deref()
            .unwrap()
            .starts_with("software stepping between the chapter's ranges"),
        "{quiet:?}"
    );
    assert_eq!(quiet.threads[0].band, "Great");
}

#[test]
fn the_chapters_ranges_decide_at_their_boundaries() {
    let soft = |ns| software_stepping(ns, ns);
    assert!(soft(19_999).starts_with("very nice"));
    assert!(soft(20_000).starts_with("good results"));
    assert!(soft(50_000).starts_with("good results"));
    assert!(soft(50_001).starts_with("software stepping between"));
    assert!(soft(100_000).starts_with("not a good candidate for software"));
    assert!(soft(1_000_001).starts_with("not a good candidate for LinuxCNC"));
    // A servo thread over 1 ms rules out LinuxCNC whatever the base thread did.
    assert!(software_stepping(5_000, 1_200_000).starts_with("not a good candidate for LinuxCNC"));
    assert!(hardware_stepping(1_000_000).starts_with("usable"));
    assert!(hardware_stepping(1_000_001).starts_with("not a good candidate for LinuxCNC"));
    // Servo only (linuxcnc-servo): no software-stepping reading.
    let r = reading(vec![JitterRow::new("servo", 1000, 40_000, None)]);
    assert_eq!(r.software_stepping, None);
    assert!(r.hardware_stepping.is_some());
}
