//! What serde's derive found wrong with a document, as a kind ([`Kind`]) rather than as the words a
//! format's error writes: an unknown field, a missing one, an unknown variant, a field given twice.
//!
//! serde's derive reports these through [`serde::de::Error`]'s constructors (`unknown_field`,
//! `missing_field`, …), which a format like toml does not implement: toml keeps only their words (and
//! a span). [`deserialize`] runs the derive against a thin wrapper of the format's deserializer whose
//! error type is this module's, so the derive's constructors reach it: each kind is noted as the error
//! leaves the derive and handed on to the format as its own words (serde's, unchanged), and the format
//! adds what only it knows — where in the text. The caller gets the format's error (its message and
//! span as without the wrapper) and the kind of the error that ended the run, if the derive named one.
//!
//! Every method forwards: the wrapper changes nothing the derive or the format sees but the error type
//! in between (names of structs and fields pass unchanged, so toml's `Spanned` and datetimes work as
//! before). Decision: the kind noted is that of the last error made by a derive and handed to the
//! format; errors a derive makes and drops itself (an untagged enum trying its variants on buffered
//! content) never reach the format and are not noted.

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};
use std::cell::RefCell;
use std::fmt;

/// What serde's derive said went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A key the struct does not take (`deny_unknown_fields`).
    UnknownField {
        /// The key as written.
        field: String,
        /// The struct's fields.
        expected: &'static [&'static str],
    },
    /// A required key absent; the error is about the table that lacks it.
    MissingField {
        /// The key.
        field: &'static str,
    },
    /// A variant the enum does not have.
    UnknownVariant {
        /// The variant as written.
        variant: String,
        /// The enum's variants.
        expected: &'static [&'static str],
    },
    /// A key given twice.
    DuplicateField {
        /// The key.
        field: &'static str,
    },
}

/// A document refused: the format's error, as without [`deserialize`], and the kind the derive named.
#[derive(Debug)]
pub struct Refused<E> {
    /// The format's error (its words, its place).
    pub error: E,
    /// What the derive said went wrong; None for the format's own errors (bad syntax, a wrong type)
    /// and for custom ones.
    pub kind: Option<Kind>,
}

/// `T` from `d`, or why not.
pub fn deserialize<'de, T, D>(d: D) -> Result<T, Refused<D::Error>>
where
    T: de::Deserialize<'de>,
    D: Deserializer<'de>,
{
    let seen = RefCell::new(None);
    let out = T::deserialize(De { d, seen: &seen });
    out.map_err(|e| {
        let error = e.into_format(&seen);
        Refused { error, kind: seen.into_inner() }
    })
}

/// [`deserialize`] for a TOML document: `toml::from_str`, with the kind (None for a document that is
/// not TOML).
pub fn from_toml<'de, T: de::Deserialize<'de>>(text: &'de str) -> Result<T, Box<Refused<toml::de::Error>>> {
    let d = toml::de::Deserializer::parse(text).map_err(|error| Refused { error, kind: None })?;
    deserialize(d).map_err(Box::new)
}

/// The kind noted so far.
type Seen = RefCell<Option<Kind>>;

/// The error type the derive sees: the format's, or one the derive made.
#[derive(Debug)]
enum Error<E> {
    Format(E),
    Made { kind: Option<Kind>, message: String },
}

impl<E: de::Error> Error<E> {
    /// The format's error for this one: a made one becomes the format's own (in serde's words) and its
    /// kind is noted.
    fn into_format(self, seen: &Seen) -> E {
        match self {
            Error::Format(e) => e,
            Error::Made { kind, message } => {
                *seen.borrow_mut() = kind;
                E::custom(message)
            }
        }
    }

    fn made(kind: Kind, words: de::value::Error) -> Self {
        Error::Made { kind: Some(kind), message: words.to_string() }
    }
}

impl<E: fmt::Display> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Format(e) => e.fmt(f),
            Error::Made { message, .. } => f.write_str(message),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for Error<E> {}

/// serde's own words for each kind: its default constructors, on serde's plain error type.
type Words = de::value::Error;

impl<E: de::Error> de::Error for Error<E> {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error::Made { kind: None, message: msg.to_string() }
    }
    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        Self::made(Kind::UnknownField { field: field.to_string(), expected }, Words::unknown_field(field, expected))
    }
    fn missing_field(field: &'static str) -> Self {
        Self::made(Kind::MissingField { field }, Words::missing_field(field))
    }
    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        Self::made(
            Kind::UnknownVariant { variant: variant.to_string(), expected },
            Words::unknown_variant(variant, expected),
        )
    }
    fn duplicate_field(field: &'static str) -> Self {
        Self::made(Kind::DuplicateField { field }, Words::duplicate_field(field))
    }
}

/// The format's deserializer, for the derive.
struct De<'s, D> {
    d: D,
    seen: &'s Seen,
}

/// The derive's visitor, for the format.
struct Vis<'s, V> {
    v: V,
    seen: &'s Seen,
}

/// The derive's seed, for the format.
struct Seed<'s, S> {
    s: S,
    seen: &'s Seen,
}

/// The format's map, sequence and enum, for the derive.
struct Access<'s, A> {
    a: A,
    seen: &'s Seen,
}

macro_rules! forward_deserialize {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, Self::Error> {
            self.d.$method($($arg,)* Vis { v: visitor, seen: self.seen }).map_err(Error::Format)
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for De<'_, D> {
    type Error = Error<D::Error>;

    forward_deserialize! {
        deserialize_any(); deserialize_bool(); deserialize_i8(); deserialize_i16(); deserialize_i32();
        deserialize_i64(); deserialize_i128(); deserialize_u8(); deserialize_u16(); deserialize_u32();
        deserialize_u64(); deserialize_u128(); deserialize_f32(); deserialize_f64(); deserialize_char();
        deserialize_str(); deserialize_string(); deserialize_bytes(); deserialize_byte_buf();
        deserialize_option(); deserialize_unit(); deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str); deserialize_seq(); deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize); deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier(); deserialize_ignored_any();
    }

    fn is_human_readable(&self) -> bool {
        self.d.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty);)*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            self.v.$method::<Error<E>>(v).map_err(|e| e.into_format(self.seen))
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Vis<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.v.expecting(f)
    }

    forward_visit! {
        visit_bool(bool); visit_i8(i8); visit_i16(i16); visit_i32(i32); visit_i64(i64); visit_i128(i128);
        visit_u8(u8); visit_u16(u16); visit_u32(u32); visit_u64(u64); visit_u128(u128); visit_f32(f32);
        visit_f64(f64); visit_char(char); visit_str(&str); visit_borrowed_str(&'de str); visit_string(String);
        visit_bytes(&[u8]); visit_borrowed_bytes(&'de [u8]); visit_byte_buf(Vec<u8>);
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.v.visit_none::<Error<E>>().map_err(|e| e.into_format(self.seen))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.v.visit_unit::<Error<E>>().map_err(|e| e.into_format(self.seen))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.v.visit_some(De { d, seen: self.seen }).map_err(|e| e.into_format(self.seen))
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.v.visit_newtype_struct(De { d, seen: self.seen }).map_err(|e| e.into_format(self.seen))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        self.v.visit_seq(Access { a, seen: self.seen }).map_err(|e| e.into_format(self.seen))
    }
    fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        self.v.visit_map(Access { a, seen: self.seen }).map_err(|e| e.into_format(self.seen))
    }
    fn visit_enum<A: EnumAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        self.v.visit_enum(Access { a, seen: self.seen }).map_err(|e| e.into_format(self.seen))
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.s.deserialize(De { d, seen: self.seen }).map_err(|e| e.into_format(self.seen))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Access<'_, A> {
    type Error = Error<A::Error>;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, s: T) -> Result<Option<T::Value>, Self::Error> {
        self.a.next_element_seed(Seed { s, seen: self.seen }).map_err(Error::Format)
    }
    fn size_hint(&self) -> Option<usize> {
        self.a.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Access<'_, A> {
    type Error = Error<A::Error>;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, s: K) -> Result<Option<K::Value>, Self::Error> {
        self.a.next_key_seed(Seed { s, seen: self.seen }).map_err(Error::Format)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, s: V) -> Result<V::Value, Self::Error> {
        self.a.next_value_seed(Seed { s, seen: self.seen }).map_err(Error::Format)
    }
    fn size_hint(&self) -> Option<usize> {
        self.a.size_hint()
    }
}

impl<'s, 'de, A: EnumAccess<'de>> EnumAccess<'de> for Access<'s, A> {
    type Error = Error<A::Error>;
    type Variant = Access<'s, A::Variant>;

    fn variant_seed<V: DeserializeSeed<'de>>(self, s: V) -> Result<(V::Value, Self::Variant), Self::Error> {
        let seen = self.seen;
        let (value, a) = self.a.variant_seed(Seed { s, seen }).map_err(Error::Format)?;
        Ok((value, Access { a, seen }))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Access<'_, A> {
    type Error = Error<A::Error>;

    fn unit_variant(self) -> Result<(), Self::Error> {
        self.a.unit_variant().map_err(Error::Format)
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, s: T) -> Result<T::Value, Self::Error> {
        self.a.newtype_variant_seed(Seed { s, seen: self.seen }).map_err(Error::Format)
    }
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, Self::Error> {
        self.a.tuple_variant(len, Vis { v, seen: self.seen }).map_err(Error::Format)
    }
    fn struct_variant<V: Visitor<'de>>(self, fields: &'static [&'static str], v: V) -> Result<V::Value, Self::Error> {
        self.a.struct_variant(fields, Vis { v, seen: self.seen }).map_err(Error::Format)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use toml::Spanned;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        id: Spanned<String>,
        #[serde(default)]
        check: Vec<Check>,
        #[serde(default)]
        mode: Option<Mode>,
        #[serde(default)]
        when: Option<toml::value::Datetime>,
        #[serde(default)]
        spec: Option<Spec>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum Spec {
        Text(String),
        Table(TableSpec),
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct TableSpec {
        text: String,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Check {
        file: String,
        #[serde(default)]
        contains: Option<Spanned<Vec<String>>>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        Fast,
    }

    /// What toml says without the wrapper, and what it says and the kind with it.
    fn both(text: &str) -> (toml::de::Error, toml::de::Error, Option<Kind>) {
        let plain = toml::from_str::<Doc>(text).map(|_| ()).unwrap_err();
        let r = from_toml::<Doc>(text).map(|_| ()).unwrap_err();
        (plain, r.error, r.kind)
    }

    #[test]
    fn the_derive_s_mistakes_come_out_as_kinds_with_the_format_s_words_and_span_unchanged() {
        let cases: &[(&str, Option<Kind>)] = &[
            (
                "id = \"a\"\n[[check]]\nfile = \"x\"\nfiel = 2\n",
                Some(Kind::UnknownField { field: "fiel".into(), expected: &["file", "contains"] }),
            ),
            ("id = \"a\"\n[[check]]\ncontains = [\"x\"]\n", Some(Kind::MissingField { field: "file" })),
            ("[[check]]\nfile = \"x\"\n", Some(Kind::MissingField { field: "id" })),
            (
                "id = \"a\"\nmode = \"slow\"\n",
                Some(Kind::UnknownVariant { variant: "slow".into(), expected: &["fast"] }),
            ),
            // the format's own: a wrong type, bad syntax
            ("id = 3\n", None),
            ("id = \n", None),
        ];
        for (text, want) in cases {
            let (plain, e, kind) = both(text);
            assert_eq!(&kind, want, "{text}");
            assert_eq!(e.message(), plain.message(), "{text}");
            assert_eq!(e.span(), plain.span(), "{text}");
        }
    }

    #[test]
    fn what_parses_parses_the_same_spans_and_datetimes_included() {
        let text =
            "id = \"a\"\nwhen = 1979-05-27T07:32:00Z\nmode = \"fast\"\n[[check]]\nfile = \"x\"\ncontains = [\"y\"]\n";
        let doc: Doc = from_toml(text).unwrap_or_else(|r| panic!("{r:?}"));
        assert_eq!(&text[doc.id.span()], "\"a\"");
        assert_eq!(doc.when.map(|w| w.to_string()).as_deref(), Some("1979-05-27T07:32:00Z"));
        let contains = doc.check[0].contains.as_ref().unwrap_or_else(|| panic!("no contains"));
        assert_eq!(&text[contains.span()], "[\"y\"]");
    }

    #[test]
    fn a_kind_the_derive_drops_itself_is_not_reported() {
        // an untagged enum tries its variants on buffered content: the table variant's unknown field is
        // made and dropped there; what ends the run is the enum's own (custom) error
        let (plain, e, kind) = both("id = \"a\"\nspec = { txt = \"x\" }\n");
        assert_eq!(kind, None, "{e}");
        assert_eq!(e.message(), plain.message());
        assert!(e.message().contains("did not match any variant of untagged enum Spec"), "{e}");
        // and one the wrong type replaces: a wrong type is the format's
        let (_, e, kind) = both("id = \"a\"\n[[check]]\nfile = 1\n");
        assert_eq!(kind, None, "{e}");
    }
}
