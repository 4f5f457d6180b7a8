# kcm-rs image, for users with registry access (CI builds the same layout without a registry:
# hack/image.sh). Build: docker build -t kcm-rs:dev .
# Rules checked by cmd/kcm-rs/tests/dockerfile.rs: versioned base images, a final stage FROM scratch
# (no shell, no package manager), a numeric non-root USER, an exec-form ENTRYPOINT.
FROM docker.io/library/rust:1.95.0-bookworm AS build
# .git stays out of the context: `--version`'s commit comes from here
# (docker build --build-arg KCM_RS_GIT_COMMIT=$(git rev-parse HEAD) ...), "unknown" without it.
ARG KCM_RS_GIT_COMMIT=
WORKDIR /src
COPY . .
# The binary, exactly the shared libraries it loads, a passwd entry for uid 65532 and the CA bundle:
# the layout hack/image.sh builds, staged by the same script.
RUN cargo build --locked --profile image -p kcm-rs \
 && hack/image-rootfs.sh target/image/kcm-rs /rootfs

FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
EXPOSE 10257
ENTRYPOINT ["/usr/local/bin/kcm-rs"]
