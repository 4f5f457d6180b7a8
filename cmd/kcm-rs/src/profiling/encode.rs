//! A `pprof` report as a pprof CPU profile in Go's shape: sample types `samples/count` and
//! `cpu/nanoseconds`, period one sample's share of a second, one location per frame (its inlined
//! functions as lines, innermost first), leaf first in each sample.

use std::collections::HashMap;

use super::proto::{Function, Line, Location, Profile, Sample, ValueType};

/// The string table: index 0 is "", each string once.
#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Self {
        let mut s = Self::default();
        s.add("");
        s
    }

    fn add(&mut self, text: &str) -> i64 {
        if let Some(i) = self.index.get(text) {
            return *i;
        }
        let i = i64::try_from(self.table.len()).unwrap_or(i64::MAX);
        self.table.push(text.to_owned());
        self.index.insert(text.to_owned(), i);
        i
    }
}

pub fn profile(report: &pprof::Report) -> Profile {
    let mut strings = Strings::new();
    let cpu = ValueType {
        r#type: strings.add("cpu"),
        unit: strings.add("nanoseconds"),
    };
    let samples = ValueType {
        r#type: strings.add("samples"),
        unit: strings.add("count"),
    };
    let period = 1_000_000_000 / i64::from(report.timing.frequency.max(1));
    let mut functions: HashMap<(String, String), u64> = HashMap::new();
    let mut function_list = Vec::new();
    let mut locations: HashMap<Vec<Line>, u64> = HashMap::new();
    let mut location_list = Vec::new();
    let mut sample_list = Vec::new();
    for (frames, count) in &report.data {
        let mut location_id = Vec::with_capacity(frames.frames.len());
        for frame in &frames.frames {
            let lines: Vec<Line> = frame
                .iter()
                .map(|symbol| {
                    let key = (symbol.name(), symbol.filename().into_owned());
                    let next_id = u64::try_from(function_list.len()).unwrap_or(u64::MAX) + 1;
                    let function_id = *functions.entry(key.clone()).or_insert_with(|| {
                        function_list.push(Function {
                            id: next_id,
                            name: strings.add(&key.0),
                            system_name: strings.add(&symbol.sys_name()),
                            filename: strings.add(&key.1),
                        });
                        next_id
                    });
                    Line {
                        function_id,
                        line: i64::from(symbol.lineno()),
                    }
                })
                .collect();
            let next_id = u64::try_from(location_list.len()).unwrap_or(u64::MAX) + 1;
            let id = *locations.entry(lines.clone()).or_insert_with(|| {
                location_list.push(Location {
                    id: next_id,
                    line: lines,
                });
                next_id
            });
            location_id.push(id);
        }
        let count = i64::try_from(*count).unwrap_or(i64::MAX);
        sample_list.push(Sample {
            location_id,
            value: vec![count, count.saturating_mul(period)],
        });
    }
    let nanos = |d: std::time::Duration| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
    Profile {
        sample_type: vec![samples, cpu],
        sample: sample_list,
        location: location_list,
        function: function_list,
        string_table: strings.table,
        time_nanos: report
            .timing
            .start_time
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, nanos),
        duration_nanos: nanos(report.timing.duration),
        period_type: Some(cpu),
        period,
    }
}
