//! A serde adapter that decodes a kind as its own `Deserialize` does, minus
//! `metadata.managedFields`, which the parser steps over without building it.
//!
//! Why an adapter rather than a type: the kinds are k8s-openapi's, whose generated decoders cannot be
//! told to skip a field, and `ObjectMeta` decodes `fieldsV1` as a `serde_json::Value` tree (a map per
//! field path), which made managedFields most of what a ReplicaSet or Deployment watch event cost to
//! decode (`cargo bench --bench wire_decode`). The adapter wraps the deserializer on the way down: at
//! the object it watches for the key `metadata`, inside that for `managedFields`, whose value goes to
//! `IgnoredAny`; every other key and value reaches the kind's own decoder unchanged.

use std::{borrow::Cow, fmt, marker::PhantomData};

use serde::de::{
    self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor,
    value::{BorrowedStrDeserializer, StringDeserializer},
};

/// `K` decoded without its `metadata.managedFields` (left `None`).
#[derive(Debug, Clone, PartialEq)]
pub struct WithoutManagedFields<K>(pub K);

impl<'de, K: de::Deserialize<'de>> de::Deserialize<'de> for WithoutManagedFields<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        K::deserialize(Filtered::new(deserializer, Level::Object)).map(WithoutManagedFields)
    }
}

/// Where in the object a map is, which says what to do with its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// The object itself: its `metadata` is filtered further.
    Object,
    /// The object's metadata: its `managedFields` is skipped.
    Metadata,
}

enum Action {
    Keep,
    Skip,
    Descend(Level),
}

impl Level {
    fn action(self, key: &str) -> Action {
        match (self, key) {
            (Level::Object, "metadata") => Action::Descend(Level::Metadata),
            (Level::Metadata, "managedFields") => Action::Skip,
            _ => Action::Keep,
        }
    }
}

/// A deserializer whose maps (and structs) are read through [`FilteredMap`] at `level`.
struct Filtered<D> {
    inner: D,
    level: Level,
}

impl<D> Filtered<D> {
    fn new(inner: D, level: Level) -> Self {
        Filtered { inner, level }
    }
}

/// Methods whose visitor is handed on unwrapped: no map can come through them.
macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, Self::Error> {
            self.inner.$method($($arg,)* visitor)
        }
    )*};
}

/// Methods whose visitor is wrapped, so that a map or an option it is given stays filtered.
macro_rules! wrap {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, Self::Error> {
            let level = self.level;
            self.inner.$method($($arg,)* FilteredVisitor { inner: visitor, level })
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Filtered<D> {
    type Error = D::Error;

    wrap! {
        deserialize_any(),
        deserialize_option(),
        deserialize_map(),
        deserialize_struct(name: &'static str, fields: &'static [&'static str]),
        deserialize_newtype_struct(name: &'static str),
    }

    forward! {
        deserialize_bool(), deserialize_i8(), deserialize_i16(), deserialize_i32(), deserialize_i64(),
        deserialize_i128(), deserialize_u8(), deserialize_u16(), deserialize_u32(), deserialize_u64(),
        deserialize_u128(), deserialize_f32(), deserialize_f64(), deserialize_char(), deserialize_str(),
        deserialize_string(), deserialize_bytes(), deserialize_byte_buf(), deserialize_unit(),
        deserialize_unit_struct(name: &'static str), deserialize_seq(), deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
        deserialize_identifier(), deserialize_ignored_any(),
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

/// A visitor that hands its maps on as [`FilteredMap`]s, and everything else as it came.
struct FilteredVisitor<V> {
    inner: V,
    level: Level,
}

macro_rules! visit {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            self.inner.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for FilteredVisitor<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    visit! {
        visit_bool(bool), visit_i8(i8), visit_i16(i16), visit_i32(i32), visit_i64(i64), visit_i128(i128),
        visit_u8(u8), visit_u16(u16), visit_u32(u32), visit_u64(u64), visit_u128(u128), visit_f32(f32),
        visit_f64(f64), visit_char(char), visit_str(&str), visit_borrowed_str(&'de str),
        visit_string(String), visit_bytes(&[u8]), visit_borrowed_bytes(&'de [u8]), visit_byte_buf(Vec<u8>),
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_some(Filtered::new(d, self.level))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_newtype_struct(Filtered::new(d, self.level))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_map(FilteredMap {
            inner: map,
            level: self.level,
            descend: None,
        })
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_enum(data)
    }
}

/// A map whose keys are read here first: skipped ones never reach the kind's decoder.
struct FilteredMap<A> {
    inner: A,
    level: Level,
    /// The level of the value about to be read, when its key is one to descend into.
    descend: Option<Level>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for FilteredMap<A> {
    type Error = A::Error;

    fn next_key_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<Option<S::Value>, A::Error> {
        while let Some(Key(key)) = self.inner.next_key::<Key<'de>>()? {
            self.descend = match self.level.action(&key) {
                Action::Skip => {
                    self.inner.next_value::<IgnoredAny>()?;
                    continue;
                }
                Action::Keep => None,
                Action::Descend(level) => Some(level),
            };
            return match key {
                Cow::Borrowed(k) => seed.deserialize(BorrowedStrDeserializer::new(k)),
                Cow::Owned(k) => seed.deserialize(StringDeserializer::new(k)),
            }
            .map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        match self.descend.take() {
            Some(level) => self.inner.next_value_seed(FilteredSeed { inner: seed, level }),
            None => self.inner.next_value_seed(seed),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

struct FilteredSeed<S> {
    inner: S,
    level: Level,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for FilteredSeed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.inner.deserialize(Filtered::new(d, self.level))
    }
}

/// A map key, borrowed from the input where the parser can (no escapes in it).
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor<'de>(PhantomData<&'de ()>);
        impl<'de> Visitor<'de> for KeyVisitor<'de> {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor(PhantomData))
    }
}
