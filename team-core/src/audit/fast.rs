//! The canonical bytes of a line without building a [`Record`]: the line is parsed into
//! borrowed strings and a light JSON tree, which `verify` needs for every record of a large
//! log. The bytes are exactly [`super::canonical::canonical_bytes`] of the parsed record
//! (a property test holds both to that), including serde_json's behaviour on a repeated key
//! (the last one wins).

use std::borrow::Cow;
use std::fmt;
use std::io::Write as _;

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use uuid::Uuid;

use super::Stage;

/// A JSON value with borrowed strings; objects keep their entries in input order.
#[derive(Debug)]
pub(crate) enum Canon<'a> {
    Null,
    Bool(bool),
    Num(serde_json::Number),
    Str(Cow<'a, str>),
    Arr(Vec<Canon<'a>>),
    Obj(Vec<(Cow<'a, str>, Canon<'a>)>),
}

struct CanonVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for CanonVisitor<'a> {
    type Value = Canon<'a>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E>(self) -> Result<Canon<'a>, E> {
        Ok(Canon::Null)
    }
    fn visit_none<E>(self) -> Result<Canon<'a>, E> {
        Ok(Canon::Null)
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Canon<'a>, D::Error> {
        Canon::deserialize(d)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Canon<'a>, E> {
        Ok(Canon::Bool(b))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Canon<'a>, E> {
        Ok(Canon::Num(n.into()))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Canon<'a>, E> {
        Ok(Canon::Num(n.into()))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Canon<'a>, E> {
        Ok(serde_json::Number::from_f64(n).map_or(Canon::Null, Canon::Num))
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Canon<'a>, E> {
        Ok(Canon::Str(Cow::Borrowed(s)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Canon<'a>, E> {
        Ok(Canon::Str(Cow::Owned(s.to_string())))
    }
    fn visit_string<E>(self, s: String) -> Result<Canon<'a>, E> {
        Ok(Canon::Str(Cow::Owned(s)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Canon<'a>, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = a.next_element()? {
            v.push(x);
        }
        Ok(Canon::Arr(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Canon<'a>, A::Error> {
        let mut v = Vec::new();
        while let Some(k) = a.next_key::<Key<'a>>()? {
            v.push((k.0, a.next_value()?));
        }
        Ok(Canon::Obj(v))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Canon<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CanonVisitor(std::marker::PhantomData))
    }
}

/// An object key, borrowed when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Key<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Owned(s.to_string())))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

/// A record line, parsed with borrowed strings (same fields and rules as [`super::Record`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecordRef<'a> {
    pub v: u32,
    pub seq: u64,
    #[serde(borrow)]
    pub ts: Cow<'a, str>,
    pub audit_id: Uuid,
    pub stage: Stage,
    #[serde(borrow)]
    pub caller: Cow<'a, str>,
    pub caller_pid: u32,
    #[serde(borrow)]
    pub action: Cow<'a, str>,
    /// The operation (written, and hashed, only when present).
    #[serde(borrow, default)]
    pub op: Option<Cow<'a, str>>,
    pub argv: Vec<Cow<'a, str>>,
    #[serde(borrow)]
    pub endpoint: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub targets: Vec<Canon<'a>>,
    #[serde(borrow)]
    pub workspace: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub team: Option<Cow<'a, str>>,
    pub generation: Option<u64>,
    #[serde(borrow)]
    pub owner_evidence: Option<Canon<'a>>,
    #[serde(borrow)]
    pub reason: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub outcome: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub prev: Cow<'a, str>,
    #[serde(borrow)]
    pub hash: Cow<'a, str>,
}

pub(crate) fn parse_ref(line: &[u8]) -> Option<RecordRef<'_>> {
    serde_json::from_slice(line).ok()
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    let _ = serde_json::to_writer(&mut *out, s);
}

fn write_opt(out: &mut Vec<u8>, s: &Option<Cow<'_, str>>) {
    match s {
        Some(s) => write_str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

fn write_canon(out: &mut Vec<u8>, v: &Canon<'_>) {
    match v {
        Canon::Null => out.extend_from_slice(b"null"),
        Canon::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Canon::Num(n) => {
            let _ = serde_json::to_writer(&mut *out, n);
        }
        Canon::Str(s) => write_str(out, s),
        Canon::Arr(items) => {
            out.push(b'[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canon(out, x);
            }
            out.push(b']');
        }
        Canon::Obj(entries) => {
            // Sorted by key; of a repeated key the last one counts (as in serde_json's map).
            let mut idx: Vec<usize> = (0..entries.len()).collect();
            if !entries.windows(2).all(|w| w[0].0 < w[1].0) {
                idx.sort_by(|&a, &b| entries[a].0.cmp(&entries[b].0));
                let mut keep: Vec<usize> = Vec::with_capacity(idx.len());
                for i in idx {
                    match keep.last_mut() {
                        Some(last) if entries[*last].0 == entries[i].0 => *last = i,
                        _ => keep.push(i),
                    }
                }
                idx = keep;
            }
            out.push(b'{');
            for (n, &i) in idx.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                write_str(out, &entries[i].0);
                out.push(b':');
                write_canon(out, &entries[i].1);
            }
            out.push(b'}');
        }
    }
}

/// The canonical bytes of `r`: the same as `canonical_bytes` of the parsed [`super::Record`].
pub(crate) fn canonical_bytes_ref(r: &RecordRef<'_>, cap: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(cap);
    let _ = write!(out, "{{\"v\":{},\"seq\":{},\"ts\":", r.v, r.seq);
    write_str(&mut out, &r.ts);
    out.extend_from_slice(b",\"audit_id\":");
    write_str(
        &mut out,
        r.audit_id
            .hyphenated()
            .encode_lower(&mut Uuid::encode_buffer()),
    );
    out.extend_from_slice(b",\"stage\":");
    write_str(&mut out, r.stage.as_str());
    out.extend_from_slice(b",\"caller\":");
    write_str(&mut out, &r.caller);
    let _ = write!(out, ",\"caller_pid\":{},\"action\":", r.caller_pid);
    write_str(&mut out, &r.action);
    if let Some(op) = &r.op {
        out.extend_from_slice(b",\"op\":");
        write_str(&mut out, op);
    }
    out.extend_from_slice(b",\"argv\":[");
    for (i, a) in r.argv.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(&mut out, a);
    }
    out.extend_from_slice(b"],\"endpoint\":");
    write_opt(&mut out, &r.endpoint);
    out.extend_from_slice(b",\"targets\":[");
    for (i, t) in r.targets.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_canon(&mut out, t);
    }
    out.extend_from_slice(b"],\"workspace\":");
    write_opt(&mut out, &r.workspace);
    out.extend_from_slice(b",\"team\":");
    write_opt(&mut out, &r.team);
    out.extend_from_slice(b",\"generation\":");
    match r.generation {
        Some(g) => {
            let _ = write!(out, "{g}");
        }
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"owner_evidence\":");
    match &r.owner_evidence {
        Some(v) => write_canon(&mut out, v),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"reason\":");
    write_opt(&mut out, &r.reason);
    out.extend_from_slice(b",\"outcome\":");
    write_opt(&mut out, &r.outcome);
    out.extend_from_slice(b",\"prev\":");
    write_str(&mut out, &r.prev);
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests {
    use super::super::canonical::{canonical_bytes, compute_hash, parse_line, render_line};
    use super::super::{Entry, Record};
    use super::*;
    use proptest::prelude::*;

    fn arb_json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<u64>().prop_map(serde_json::Value::from),
            any::<f64>().prop_map(serde_json::Value::from),
            any::<String>().prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                proptest::collection::btree_map(any::<String>(), inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn borrowed_canonical_bytes_equal_the_record_ones(
            caller in any::<String>(),
            argv in proptest::collection::vec(any::<String>(), 0..3),
            targets in proptest::collection::vec(arb_json(), 0..3),
            ev in proptest::option::of(arb_json()),
            team in proptest::option::of(any::<String>()),
            generation in proptest::option::of(any::<u64>()),
            op in proptest::option::of(any::<String>()),
        ) {
            let mut r = Record::build(
                7,
                Stage::Intent,
                Uuid::new_v4(),
                &Entry { caller, argv, targets, owner_evidence: ev, team, generation, op, ..Entry::default() },
                "0".repeat(64),
            );
            r.hash = compute_hash(&r);
            let line = render_line(&r);
            let body = &line[..line.len() - 1];
            let rr = parse_ref(body).expect("parses");
            prop_assert_eq!(canonical_bytes_ref(&rr, 0), canonical_bytes(&parse_line(body).unwrap()));
        }

        #[test]
        fn hand_written_lines_agree_too(
            k1 in "[a-c\"\\\\]{0,3}", k2 in "[a-c\"\\\\]{0,3}", sp in proptest::bool::ANY,
        ) {
            // Unsorted keys, repeated keys, escapes, spacing: both readings must agree.
            let k1 = serde_json::to_string(&k1).unwrap();
            let k2 = serde_json::to_string(&k2).unwrap();
            let s = if sp { " " } else { "" };
            let line = format!(
                "{{\"v\":1,\"seq\":1,\"ts\":\"t\\u0041\",\"audit_id\":\"{}\",\"stage\":\"intent\",\"caller\":\"c\",\"caller_pid\":1,\"action\":\"a\",\"argv\":[],\"endpoint\":null,\"targets\":[{{{k1}:1,{s}{k2}:[2.5,{{{k2}:null,{k1}:true}}],{k1}:\"x\"}}],\"workspace\":null,\"team\":null,\"generation\":null,\"owner_evidence\":{{{k2}:{k1}}},\"reason\":null,\"outcome\":null,\"prev\":\"p\",\"hash\":\"h\"}}",
                Uuid::nil()
            );
            let a = parse_line(line.as_bytes()).map(|r| canonical_bytes(&r)).ok();
            let b = parse_ref(line.as_bytes()).map(|r| canonical_bytes_ref(&r, 0));
            prop_assert_eq!(a, b);
        }
    }
}
