use super::*;

#[test]
fn ip_octets_are_read_by_name_from_the_ipext_section() {
    let netstat = "TcpExt: SyncookiesSent InOctets\nTcpExt: 1 999\n\
                   IpExt: InNoRoutes InOctets OutOctets\nIpExt: 0 24752903998 23969501890\n";
    assert_eq!(ip_octets(netstat), (24_752_903_998.0, 23_969_501_890.0));
    assert_eq!(ip_octets("IpExt: InOctets\n"), (0.0, 0.0), "no line of values");
    assert_eq!(
        ip_octets("IpExt: InNoRoutes\nIpExt: 3\n"),
        (0.0, 0.0),
        "no such fields"
    );
    assert_eq!(ip_octets(""), (0.0, 0.0));
}

/// The page carries client_golang's nine families with its help texts and types, and values that
/// are this process's.
#[cfg(target_os = "linux")]
#[test]
fn the_page_has_the_process_families_of_a_go_component() {
    let m = crate::metrics::Metrics::new();
    let text = m.encode();
    for (name, help, kind) in [
        (
            "process_cpu_seconds_total",
            "Total user and system CPU time spent in seconds.",
            "counter",
        ),
        (
            "process_max_fds",
            "Maximum number of open file descriptors.",
            "gauge",
        ),
        (
            "process_network_receive_bytes_total",
            "Number of bytes received by the process over the network.",
            "counter",
        ),
        (
            "process_network_transmit_bytes_total",
            "Number of bytes sent by the process over the network.",
            "counter",
        ),
        ("process_open_fds", "Number of open file descriptors.", "gauge"),
        (
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            "gauge",
        ),
        (
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
            "gauge",
        ),
        (
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes.",
            "gauge",
        ),
        (
            "process_virtual_memory_max_bytes",
            "Maximum amount of virtual memory available in bytes.",
            "gauge",
        ),
    ] {
        assert!(
            text.contains(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n")),
            "{name}:\n{text}"
        );
    }
    let value = |name: &str| -> f64 {
        let prefix = format!("\n{name} ");
        let at = text.find(&prefix).unwrap_or_else(|| panic!("{name} in:\n{text}")) + prefix.len();
        text[at..]
            .lines()
            .next()
            .and_then(|v| v.parse().ok())
            .expect("a number")
    };
    assert!(value("process_resident_memory_bytes") > 1e6);
    assert!(value("process_open_fds") >= 3.0);
    assert!(value("process_cpu_seconds_total") >= 0.0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64();
    let started = value("process_start_time_seconds");
    assert!(
        started <= now + 1.0 && started > now - 3600.0,
        "{started} against {now}"
    );
}
