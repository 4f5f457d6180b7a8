use k8s_openapi::api::core::v1::ObjectReference;

use super::*;

fn event(object: &str, reason: &'static str, message: &str) -> EventRecord {
    EventRecord {
        object: ObjectReference {
            kind: Some("ReplicaSet".into()),
            namespace: Some("ns".into()),
            name: Some(object.into()),
            uid: Some(format!("uid-{object}")),
            api_version: Some("apps/v1".into()),
            ..ObjectReference::default()
        },
        type_: "Normal",
        reason: reason.into(),
        message: message.into(),
    }
}

/// Feeds `ev` through the correlator as the writer does, naming a first event by stamp 1.
fn write(c: &mut Correlator, ev: &EventRecord, now: Instant) -> Option<Decision> {
    c.correlate(ev, now, 1, 1)
}

/// A first event is named by when it was recorded, however long it waited to be written; a combined
/// one by when the correlator made it, as client-go's aggregator names it at its own time.
#[tokio::test(start_paused = true)]
async fn an_event_is_stamped_when_recorded_and_a_combined_one_when_made() {
    let mut c = Correlator::default();
    let now = Instant::now();
    let mut decisions = (0..AGGREGATE_MAX_EVENTS as u64).map(|i| {
        let ev = event("rs", "SuccessfulDelete", &format!("Deleted pod: p{i}"));
        c.correlate(&ev, now, 10 + i, 20 + i)
            .expect("under the spam burst")
    });
    let first = decisions.next().unwrap();
    assert_eq!((first.combined, first.observed.stamp), (false, 10));
    let last = decisions.last().unwrap();
    assert!(last.combined);
    assert_eq!(last.observed.stamp, 20 + AGGREGATE_MAX_EVENTS as u64 - 1);
}

#[tokio::test(start_paused = true)]
async fn the_tenth_distinct_message_and_later_ones_are_combined_into_one_event() {
    let mut c = Correlator::default();
    let now = Instant::now();
    let mut combined = Vec::new();
    for i in 0..15 {
        let d = write(
            &mut c,
            &event("rs", "SuccessfulDelete", &format!("Deleted pod: p{i}")),
            now,
        )
        .unwrap();
        if d.combined {
            combined.push((d.message.clone(), d.existing.map(|e| e.count)));
        }
    }
    assert_eq!(combined.len(), 6, "messages 10 to 15");
    assert_eq!(
        combined[0],
        ("(combined from similar events): Deleted pod: p9".into(), None),
        "the first combined event is created"
    );
    assert_eq!(
        combined[5],
        ("(combined from similar events): Deleted pod: p14".into(), Some(5)),
        "later ones patch it, counting up"
    );
}

#[tokio::test(start_paused = true)]
async fn identical_events_count_up_and_other_reasons_or_objects_are_apart() {
    let mut c = Correlator::default();
    let now = Instant::now();
    let first = write(&mut c, &event("rs", "SuccessfulCreate", "Created pod: a"), now).unwrap();
    assert_eq!(first.existing, None);
    let again = write(&mut c, &event("rs", "SuccessfulCreate", "Created pod: a"), now).unwrap();
    assert_eq!(again.existing.map(|e| e.count), Some(1));
    for i in 0..9 {
        let d = write(&mut c, &event("rs", "FailedCreate", &format!("e{i}")), now).unwrap();
        assert!(!d.combined, "another reason has its own count of similar events");
        let d = write(&mut c, &event("other", "SuccessfulCreate", &format!("m{i}")), now).unwrap();
        assert!(!d.combined, "another object too");
    }
}

#[tokio::test(start_paused = true)]
async fn similar_events_more_than_ten_minutes_apart_start_afresh() {
    let mut c = Correlator::default();
    for i in 0..9 {
        write(
            &mut c,
            &event("rs", "SuccessfulDelete", &format!("m{i}")),
            Instant::now(),
        );
    }
    tokio::time::advance(AGGREGATE_INTERVAL + Duration::from_secs(1)).await;
    let d = write(&mut c, &event("rs", "SuccessfulDelete", "m9"), Instant::now()).unwrap();
    assert!(!d.combined);
}

#[tokio::test(start_paused = true)]
async fn the_spam_filter_passes_25_per_object_then_one_per_five_minutes() {
    let mut c = Correlator::default();
    let passed = (0..100)
        .filter(|i| {
            write(
                &mut c,
                &event("rs", "SuccessfulCreate", &format!("m{i}")),
                Instant::now(),
            )
            .is_some()
        })
        .count();
    assert_eq!(passed, 25);
    assert!(
        write(&mut c, &event("another", "SuccessfulCreate", "m"), Instant::now()).is_some(),
        "per object"
    );
    tokio::time::advance(SPAM_REFILL).await;
    assert!(write(&mut c, &event("rs", "SuccessfulCreate", "late"), Instant::now()).is_some());
    assert!(write(&mut c, &event("rs", "SuccessfulCreate", "later"), Instant::now()).is_none());
}

#[tokio::test(start_paused = true)]
async fn caches_forget_the_least_recently_used_beyond_their_size() {
    let mut c = Correlator::default();
    let now = Instant::now();
    write(&mut c, &event("first", "SuccessfulCreate", "m"), now);
    write(&mut c, &event("kept", "SuccessfulCreate", "m"), now);
    for i in 0..CACHE_ENTRIES - 1 {
        if i == CACHE_ENTRIES / 2 {
            // Touched recently: survives the evictions below.
            write(&mut c, &event("kept", "SuccessfulCreate", "m"), now);
        }
        write(&mut c, &event(&format!("o{i}"), "SuccessfulCreate", "m"), now);
    }
    let kept = write(&mut c, &event("kept", "SuccessfulCreate", "m"), now).unwrap();
    assert_eq!(kept.existing.map(|e| e.count), Some(2));
    let first = write(&mut c, &event("first", "SuccessfulCreate", "m"), now).unwrap();
    assert_eq!(first.existing, None, "the oldest entry is forgotten");
}

#[tokio::test(start_paused = true)]
async fn the_same_strings_give_the_same_key_and_their_parts_cannot_run_together() {
    let mut c = Correlator::default();
    let now = Instant::now();
    let a = write(&mut c, &event("rs", "SuccessfulCreate", "m"), now).unwrap();
    let again = write(&mut c, &event("rs", "SuccessfulCreate", "m"), now).unwrap();
    assert_eq!(a.key, again.key);
    // client-go joins the parts with nothing between them; these hash apart.
    let mut moved = event("rs", "SuccessfulCreate", "m");
    moved.object.name = Some("r".into());
    moved.object.uid = Some("suid-rs".into());
    let moved = write(&mut c, &moved, now).unwrap();
    assert_ne!(a.key, moved.key);
    assert_eq!(moved.existing, None);
}

/// Repeats the spam filter drops are still counted (client-go observes before it filters): the
/// next one it lets through carries every occurrence, under the first one's name.
#[tokio::test(start_paused = true)]
async fn repeats_the_spam_filter_drops_still_count() {
    let mut c = Correlator::default();
    let t0 = Instant::now();
    let ev = event("rs", "FailedCreate", "quota exceeded");
    let passed = (0..30).filter(|_| write(&mut c, &ev, t0).is_some()).count();
    assert_eq!(passed, 25, "the burst");
    let later = c
        .correlate(&ev, t0 + SPAM_REFILL, 99, 99)
        .expect("a token refilled");
    assert_eq!(later.existing, Some(Existing { stamp: 1, count: 30 }));
}

/// Each type of event has its own spam bucket (client-go's spam key ends with the type): a burst of
/// warnings leaves an object's normal events alone.
#[tokio::test(start_paused = true)]
async fn each_type_has_its_own_spam_bucket() {
    let mut c = Correlator::default();
    let now = Instant::now();
    let mut warning = event("rs", "FailedCreate", "quota exceeded");
    warning.type_ = "Warning";
    for i in 0..40 {
        warning.message = format!("quota exceeded {i}");
        let _ = write(&mut c, &warning, now);
    }
    assert!(write(&mut c, &event("rs", "SuccessfulCreate", "made"), now).is_some());
}
