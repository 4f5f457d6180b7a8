//! The `process_*` families every Go component's `/metrics` carries (client_golang's process
//! collector, which component-base registers for KCM): CPU time, memory, file descriptors, start
//! time and the network namespace's bytes, read from `/proc` at each scrape. Dashboards and
//! benchmarks built for KCM read them: `rate(process_cpu_seconds_total[1m])` is how a user compares
//! kcm-rs's CPU with KCM's without a profiler.
//!
//! The `procfs` crate reads each file as the kernel writes it; `/proc/self/net/netstat`, where Go
//! takes the network bytes (`IpExt` `InOctets` and `OutOctets`), is one it does not parse, so that
//! is done here. What cannot be read is left off the page, as client_golang leaves it off when its
//! errors are not reported (component-base's setting).

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{counter::ConstCounter, gauge::ConstGauge},
};

/// Reads `/proc/self` at each scrape.
#[derive(Debug, Default)]
pub struct ProcessCollector;

/// One sample: a family's name (a counter's without `_total`, which the OpenMetrics encoder adds to
/// the sample and `prom_text` to the family), its help as client_golang writes it, and whether it
/// counts.
struct Sample {
    name: &'static str,
    help: &'static str,
    counter: bool,
    value: f64,
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        for s in read() {
            // A registered metric's help gets a `.` from prometheus-client, which the page writer
            // (`prom_text`) takes off; a collector's is written as given, so it gets one here.
            let help = format!("{}.", s.help);
            if s.counter {
                let c = ConstCounter::new(s.value);
                c.encode(encoder.encode_descriptor(s.name, &help, None, c.metric_type())?)?;
            } else {
                let g = ConstGauge::new(s.value);
                g.encode(encoder.encode_descriptor(s.name, &help, None, g.metric_type())?)?;
            }
        }
        Ok(())
    }
}

/// The samples, in client_golang's order (the page sorts nothing).
#[cfg(target_os = "linux")]
fn read() -> Vec<Sample> {
    use procfs::{WithCurrentSystemInfo as _, process::Process};
    let mut out = Vec::new();
    let Ok(me) = Process::myself() else {
        return out;
    };
    let sample = |name, help, counter, value| Sample {
        name,
        help,
        counter,
        value,
    };
    // Bytes read as f64, as Go's collector reports every value: exact below 2^53.
    #[expect(clippy::cast_precision_loss, reason = "Prometheus values are floats")]
    let float = |n: u64| n as f64;
    if let Ok(stat) = me.stat() {
        let ticks = float(procfs::ticks_per_second());
        out.push(sample(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds.",
            true,
            float(stat.utime + stat.stime) / ticks,
        ));
        out.push(sample(
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes.",
            false,
            float(stat.vsize),
        ));
        out.push(sample(
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            false,
            float(stat.rss_bytes().get()),
        ));
        if let Ok(boot) = procfs::boot_time_secs() {
            out.push(sample(
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                false,
                float(boot) + float(stat.starttime) / ticks,
            ));
        }
    }
    if let Ok(fds) = me.fd_count() {
        out.push(sample(
            "process_open_fds",
            "Number of open file descriptors.",
            false,
            float(u64::try_from(fds).unwrap_or(u64::MAX)),
        ));
    }
    if let Ok(limits) = me.limits() {
        // "unlimited" reads as the largest unsigned value, as Go's procfs reads it.
        let limit = |l: procfs::process::LimitValue| match l {
            procfs::process::LimitValue::Unlimited => float(u64::MAX),
            procfs::process::LimitValue::Value(v) => float(v),
        };
        out.push(sample(
            "process_max_fds",
            "Maximum number of open file descriptors.",
            false,
            limit(limits.max_open_files.soft_limit),
        ));
        out.push(sample(
            "process_virtual_memory_max_bytes",
            "Maximum amount of virtual memory available in bytes.",
            false,
            limit(limits.max_address_space.soft_limit),
        ));
    }
    if let Ok(text) = std::fs::read_to_string("/proc/self/net/netstat") {
        let (received, sent) = ip_octets(&text);
        out.push(sample(
            "process_network_receive_bytes",
            "Number of bytes received by the process over the network.",
            true,
            received,
        ));
        out.push(sample(
            "process_network_transmit_bytes",
            "Number of bytes sent by the process over the network.",
            true,
            sent,
        ));
    }
    out
}

#[cfg(not(target_os = "linux"))]
fn read() -> Vec<Sample> {
    Vec::new()
}

/// `InOctets` and `OutOctets` of the `IpExt` section (a line of names, then a line of values),
/// 0 for one that is missing, as client_golang takes them.
fn ip_octets(netstat: &str) -> (f64, f64) {
    let mut section = netstat.lines().filter_map(|l| l.strip_prefix("IpExt:"));
    let (Some(names), Some(values)) = (section.next(), section.next()) else {
        return (0.0, 0.0);
    };
    let field = |wanted: &str| {
        names
            .split_whitespace()
            .zip(values.split_whitespace())
            .find(|(name, _)| *name == wanted)
            .and_then(|(_, v)| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (field("InOctets"), field("OutOctets"))
}

#[cfg(test)]
#[path = "process_metrics_tests.rs"]
mod tests;
