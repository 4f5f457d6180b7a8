//! `--print-shard-cuts`: fits the cuts of `--shards` to the cluster's namespaces, weighted by their
//! pods, and prints the flags to run with, with each shard's load beside the equal ranges' for
//! comparison. Run once by an operator (it lists every pod's metadata); the cuts then go into the
//! replicas' arguments. A change of cuts is a change of layout, handed over as one of `--shards`.
//! With `--shard-cuts=auto` the replicas weigh the namespaces the same way themselves
//! (`refit`).

use std::collections::BTreeMap;

use informer::{Layout, fnv1a64};
use k8s_openapi::{
    api::core::v1::{Namespace, Pod},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::{Api, Resource, api::ListParams};
use serde::de::DeserializeOwned;

/// Why the cuts could not be printed.
#[derive(Debug, thiserror::Error)]
pub enum PrintError {
    #[error("listing the namespaces and pods: {0}")]
    List(#[from] kube::Error),
    #[error(transparent)]
    Layout(#[from] informer::LayoutError),
}

/// Each namespace weighs its pods plus this, so that namespaces without pods (yet) spread too.
const NAMESPACE_WEIGHT: u64 = 1;
/// Page size of the metadata lists (client-go's pager default).
const PAGE: u32 = 500;

/// Prints `--shards=N --shard-cuts=…` and a table of namespaces and pods per shard.
pub async fn print_cuts(count: u32, client: kube::Client) -> Result<(), PrintError> {
    let pods = pods_by_namespace(&client, true).await?;
    let fitted = Layout::fit(count, weights(&pods))?;
    let equal = Layout::equal(count)?;
    println!("--shards={count} --shard-cuts={}", fitted.cuts_text());
    println!();
    println!("shard\tnamespaces\tpods\t(equal ranges: namespaces\tpods)");
    let (fit_loads, equal_loads) = (loads(&fitted, &pods), loads(&equal, &pods));
    for (i, (f, e)) in fit_loads.iter().zip(&equal_loads).enumerate() {
        println!("{i}\t{}\t{}\t({}\t{})", f.0, f.1, e.0, e.1);
    }
    Ok(())
}

/// Each namespace's hash and weight: its pods plus [`NAMESPACE_WEIGHT`].
pub fn weights(pods: &BTreeMap<String, u64>) -> Vec<(u64, u64)> {
    pods.iter()
        .map(|(ns, pods)| (fnv1a64(ns.as_bytes()), pods + NAMESPACE_WEIGHT))
        .collect()
}

/// Every namespace with pods and its pod count; with `all_namespaces`, the others too with 0 (a
/// list of Namespaces, which the replicas' own role does not grant).
pub async fn pods_by_namespace(
    client: &kube::Client,
    all_namespaces: bool,
) -> kube::Result<BTreeMap<String, u64>> {
    let mut by_ns = BTreeMap::new();
    if all_namespaces {
        each_metadata(Api::<Namespace>::all(client.clone()), |m| {
            by_ns.insert(m.name.unwrap_or_default(), 0);
        })
        .await?;
    }
    each_metadata(Api::<Pod>::all(client.clone()), |m| {
        *by_ns.entry(m.namespace.unwrap_or_default()).or_default() += 1;
    })
    .await?;
    Ok(by_ns)
}

/// Calls `f` with the metadata of every object of `api`, a page at a time.
async fn each_metadata<K>(api: Api<K>, mut f: impl FnMut(ObjectMeta)) -> kube::Result<()>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut lp = ListParams::default().limit(PAGE);
    loop {
        let page = api.list_metadata(&lp).await?;
        page.items.into_iter().for_each(|o| f(o.metadata));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => lp = lp.continue_token(&c),
            None => return Ok(()),
        }
    }
}

/// Namespaces and pods per shard of `layout`.
fn loads(layout: &Layout, pods: &BTreeMap<String, u64>) -> Vec<(u64, u64)> {
    let mut loads = vec![(0, 0); layout.count() as usize];
    for (ns, n) in pods {
        let load = &mut loads[layout.shard_of_namespace(ns).index() as usize];
        load.0 += 1;
        load.1 += n;
    }
    loads
}
