//! Where the clients' configuration comes from, as KCM finds its own (client-go
//! `BuildConfigFromFlags`): `--kubeconfig`, with `--master` overriding its server; `--master` alone
//! is the server and nothing else, no credentials; neither is in-cluster, where kcm-rs then also
//! looks at `$KUBECONFIG` and `~/.kube/config`, as kube does. kube's loader is used with one change
//! (see [`from_kubeconfig`]): the environment's proxy is read later, by the transport, as client-go
//! reads it.

use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};

use crate::{client::ClientError, flags::Args};

/// The client configuration: `--kubeconfig`, else in-cluster, `$KUBECONFIG`, `~/.kube/config`; then
/// `--master` overrides the server address. `--master` without `--kubeconfig` reads no credentials
/// from anywhere: KCM then loads an empty configuration with the server set (an anonymous client,
/// the system's CAs), and a pod's token or a user's kubeconfig must not go to a server named
/// instead of theirs.
pub async fn config(args: &Args) -> Result<kube::Config, ClientError> {
    match (args.kubeconfig.as_deref(), args.master.as_deref()) {
        (None, Some(master)) => Ok(kube::Config::new(server_url(master, false)?)),
        (path, master) => {
            let mut config = config_from(path).await?;
            if let Some(master) = master {
                let tls = config.root_cert.is_some()
                    || config.accept_invalid_certs
                    || config.auth_info.client_certificate.is_some()
                    || config.auth_info.client_certificate_data.is_some();
                config.cluster_url = server_url(master, tls)?;
            }
            Ok(config)
        }
    }
}

/// `--master` as client-go reads a server address (`DefaultServerURL`): a URL, or a `host:port`
/// given the scheme its TLS settings call for (`https` with a CA, a client certificate or
/// `insecure-skip-tls-verify`, else `http`). A bare host would otherwise reach kube as a URL with
/// no scheme, which it cannot address. Only a URL may carry a path (the prefix of a proxy in front of
/// the API server); a `host:port/path` is refused, as client-go refuses it.
fn server_url(master: &str, tls: bool) -> Result<http::Uri, ClientError> {
    let invalid = |source| ClientError::Master {
        master: master.to_owned(),
        source,
    };
    if let Ok(uri) = master.parse::<http::Uri>()
        && uri.scheme().is_some()
        && uri.authority().is_some()
    {
        return Ok(uri);
    }
    let scheme = if tls { "https" } else { "http" };
    let uri: http::Uri = format!("{scheme}://{master}").parse().map_err(invalid)?;
    match uri.authority() {
        Some(a) if !a.host().is_empty() && matches!(uri.path(), "" | "/") => Ok(uri),
        _ => Err(ClientError::NoHost {
            master: master.to_owned(),
        }),
    }
}

/// The configuration in the kubeconfig at `path`; without one, in-cluster, else `$KUBECONFIG` or
/// `~/.kube/config`.
pub(crate) async fn config_from(path: Option<&std::path::Path>) -> Result<kube::Config, ClientError> {
    match path {
        Some(path) => {
            let kubeconfig = |source| ClientError::Kubeconfig {
                path: path.to_owned(),
                source,
            };
            let kc = Kubeconfig::read_from(path).map_err(kubeconfig)?;
            from_kubeconfig(kc).await.map_err(kubeconfig)
        }
        // In-cluster first, as KCM without --kubeconfig (client-go `BuildConfigFromFlags`); kube's
        // `infer` would read a kubeconfig first, then fall back to in-cluster.
        None => match kube::Config::incluster() {
            Ok(config) => Ok(config),
            Err(in_cluster) => {
                let kc = match Kubeconfig::read() {
                    Ok(kc) => kc,
                    Err(kubeconfig) => {
                        return Err(ClientError::NoConfig {
                            in_cluster,
                            kubeconfig,
                        });
                    }
                };
                from_kubeconfig(kc)
                    .await
                    .map_err(|kubeconfig| ClientError::NoConfig {
                        in_cluster,
                        kubeconfig,
                    })
            }
        },
    }
}

/// What kube reads in place of the environment's proxy while it loads a kubeconfig (see
/// [`from_kubeconfig`]); never used to connect.
const NO_PROXY_STAND_IN: &str = "http://kcm-rs-reads-the-environment-later.invalid";

/// kube's configuration from `kc`, whose `proxy_url` is the current cluster's `proxy-url` alone.
///
/// kube reads `HTTPS_PROXY` into it when the cluster names none, and fails the load on a value that
/// does not parse; client-go leaves the environment to its transport, which reads it only for a
/// server it would proxy (`crate::proxy`: not a loopback one, nor one `NO_PROXY` names). So kube
/// is given a stand-in to read, and the configuration none.
async fn from_kubeconfig(mut kc: Kubeconfig) -> Result<kube::Config, KubeconfigError> {
    let mut stand_in = false;
    if let Some(c) = current_cluster(&mut kc)
        && c.proxy_url.as_deref().is_none_or(str::is_empty)
    {
        c.proxy_url = Some(NO_PROXY_STAND_IN.to_owned());
        stand_in = true;
    }
    let mut config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
    if stand_in {
        config.proxy_url = None;
    }
    Ok(config)
}

/// The current context's cluster, as kube resolves it.
fn current_cluster(kc: &mut Kubeconfig) -> Option<&mut kube::config::Cluster> {
    let context = kc.current_context.as_deref()?;
    let cluster = kc
        .contexts
        .iter()
        .find(|c| c.name == context)?
        .context
        .as_ref()?
        .cluster
        .clone();
    kc.clusters
        .iter_mut()
        .find(|c| c.name == cluster)?
        .cluster
        .as_mut()
}

#[cfg(test)]
#[path = "kubeconfig_tests.rs"]
mod tests;
