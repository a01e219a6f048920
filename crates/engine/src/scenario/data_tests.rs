//! Data sets: the CSV reader, slices, and each order and policy's hand-out, table-driven.

use std::collections::HashSet;
use std::sync::Arc;

use super::*;

fn spec(csv: &str, columns: &[&str]) -> DataSpec {
    DataSpec {
        name: "u".into(),
        per: "iteration".into(),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows: Vec::new(),
        csv: Some(csv.into()),
        order: "sequential".into(),
        unique: false,
        on_exhausted: None,
        slice: None,
        line: Some(7),
    }
}

fn cells(d: &Data, i: usize) -> Vec<String> {
    d.rows.row(i).map(str::to_string).collect()
}

#[test]
fn csv_quoting_crlf_and_blank_lines() {
    let text = "name,pw\r\nann,\"a,1\"\r\n\r\n\"bo\"\"b\",\"two\nlines\"\r\n";
    let d = Data::build(&spec(text, &["name", "pw"]), vec![2, 3]).unwrap();
    assert_eq!(d.rows.len(), 2);
    assert_eq!(cells(&d, 0), ["ann", "a,1"]);
    assert_eq!(cells(&d, 1), ["bo\"b", "two\nlines"]);
}

#[test]
fn bad_sets_are_one_line() {
    let cases: &[(&str, &str, Option<&str>, bool, &str)] = &[
        (
            "a\n1,2\n",
            "sequential",
            None,
            false,
            "line 2 has 2 fields, the header 1",
        ),
        ("a\n", "sequential", None, false, "has no rows"),
        (
            "a\n1\n",
            "shuffled",
            None,
            false,
            "order must be sequential or random",
        ),
        (
            "a\n1\n",
            "sequential",
            Some("wrap"),
            false,
            "on_exhausted must be",
        ),
        (
            "a\n1\n",
            "sequential",
            Some("recycle"),
            true,
            "unique=True uses each row once",
        ),
        ("a\n1\n", "random", Some("stop"), false, "never runs out"),
    ];
    for (text, order, on, unique, want) in cases {
        let mut s = spec(text, &["a"]);
        s.order = (*order).into();
        s.on_exhausted = on.map(str::to_string);
        s.unique = *unique;
        let e = Data::build(&s, vec![2]).unwrap_err();
        assert!(e.contains(want), "{text:?}: {e}");
    }
}

#[test]
fn slices_deal_each_row_to_one_injector() {
    let text: String = std::iter::once("id\n".to_string())
        .chain((0..10).map(|i| format!("{i}\n")))
        .collect();
    let mut all = Vec::new();
    for i in 0..3 {
        let mut s = spec(&text, &["id"]);
        s.slice = Some([i, 3]);
        let d = Data::build(&s, vec![2]).unwrap();
        all.extend((0..d.rows.len()).map(|r| cells(&d, r)[0].clone()));
    }
    all.sort_by_key(|v| v.parse::<u32>().unwrap());
    assert_eq!(all, (0..10).map(|i| i.to_string()).collect::<Vec<_>>());
    let mut s = spec("id\n1\n2\n", &["id"]);
    s.slice = Some([2, 3]);
    let e = Data::build(&s, vec![2]).unwrap_err();
    assert!(e.contains("fewer rows than the 3 injectors"), "{e}");
}

/// Case: a set's order, unique, on_exhausted, and the rows six takes of three rows give.
type Case = (&'static str, bool, Option<&'static str>, [Option<usize>; 6]);

#[test]
fn policies_hand_out_rows() {
    let cases: &[Case] = &[
        (
            "sequential",
            false,
            None,
            [Some(0), Some(1), Some(2), Some(0), Some(1), Some(2)],
        ),
        (
            "sequential",
            false,
            Some("stop"),
            [Some(0), Some(1), Some(2), None, None, None],
        ),
        (
            "sequential",
            true,
            None,
            [Some(0), Some(1), Some(2), None, None, None],
        ),
        (
            "sequential",
            true,
            Some("error"),
            [Some(0), Some(1), Some(2), None, None, None],
        ),
    ];
    for (order, unique, on, want) in cases {
        let mut s = spec("a\nx\ny\nz\n", &["a"]);
        s.order = (*order).into();
        s.unique = *unique;
        s.on_exhausted = on.map(str::to_string);
        let d = Data::build(&s, vec![2]).unwrap();
        let mut rng = Rng::new(1);
        let got: Vec<Option<usize>> = (0..6).map(|_| d.take(&mut rng)).collect();
        assert_eq!(got, want, "{order} unique={unique} {on:?}");
        let r = d.report();
        assert_eq!(r.used_up, want.contains(&None), "{r:?}");
        assert_eq!(r.taken, want.iter().flatten().count() as u64, "{r:?}");
        assert_eq!(
            d.stopped(),
            r.used_up && d.on_exhausted == OnExhausted::Stop
        );
    }
}

#[test]
fn random_unique_is_a_permutation_and_random_draws_cover() {
    let text: String = std::iter::once("id\n".to_string())
        .chain((0..1000).map(|i| format!("{i}\n")))
        .collect();
    let mut s = spec(&text, &["id"]);
    s.order = "random".into();
    s.unique = true;
    let d = Data::build(&s, vec![2]).unwrap();
    let mut rng = Rng::new(1);
    let got: Vec<usize> = (0..1000).map(|_| d.take(&mut rng).unwrap()).collect();
    assert_ne!(got, (0..1000).collect::<Vec<_>>(), "shuffled");
    assert_eq!(
        got.iter().collect::<HashSet<_>>().len(),
        1000,
        "each row once"
    );
    assert_eq!(d.take(&mut rng), None);
    s.unique = false;
    let d = Data::build(&s, vec![2]).unwrap();
    let seen: HashSet<usize> = (0..20_000).filter_map(|_| d.take(&mut rng)).collect();
    assert_eq!(
        seen.len(),
        1000,
        "20 draws a row on average reach every row"
    );
    assert_eq!(d.report().taken, 20_000);
}

#[test]
fn threads_share_one_cursor_each_row_once() {
    let text: String = std::iter::once("id\n".to_string())
        .chain((0..10_000).map(|i| format!("{i}\n")))
        .collect();
    let mut s = spec(&text, &["id"]);
    s.unique = true;
    let d = Arc::new(Data::build(&s, vec![2]).unwrap());
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let d = Arc::clone(&d);
            std::thread::spawn(move || {
                let mut rng = Rng::new(t);
                std::iter::from_fn(|| d.take(&mut rng)).collect::<Vec<_>>()
            })
        })
        .collect();
    let mut all: Vec<usize> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    all.sort_unstable();
    assert_eq!(all, (0..10_000).collect::<Vec<_>>());
    let r = d.report();
    assert_eq!((r.rows, r.taken, r.used_up), (10_000, 10_000, true));
}
