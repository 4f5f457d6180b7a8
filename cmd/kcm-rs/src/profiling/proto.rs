//! The pprof profile format (`github.com/google/pprof/proto/profile.proto`), the messages a CPU
//! profile uses, declared with prost's derive (already in the tree) rather than through `pprof`'s
//! own codec, which would add a second prost and a build-time code generator to every build.

/// A profile: samples over locations, with every string in `string_table` (index 0 is "").
#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub period: i64,
}

/// A kind of value and its unit, as indexes into the string table.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// One stack (leaf first) and its values, in `sample_type` order.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
}

/// A frame: its functions, innermost inlined one first.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, prost::Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    #[prost(int64, tag = "2")]
    pub line: i64,
}

#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    #[prost(int64, tag = "4")]
    pub filename: i64,
}

/// What the tests read of a decoded profile, through its string table.
#[cfg(test)]
impl Profile {
    fn string(&self, i: i64) -> &str {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.string_table.get(i))
            .map_or("", String::as_str)
    }

    /// Each sample type as (type, unit).
    pub fn sample_types(&self) -> Vec<(&str, &str)> {
        self.sample_type
            .iter()
            .map(|t| (self.string(t.r#type), self.string(t.unit)))
            .collect()
    }

    /// Whether a function whose name contains `part` is among the profile's functions.
    pub fn has_function(&self, part: &str) -> bool {
        self.function.iter().any(|f| self.string(f.name).contains(part))
    }
}
