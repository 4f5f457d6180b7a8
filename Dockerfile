# kcm-rs image, for users with registry access (CI builds the same layout without a registry:
# hack/image.sh). Build: docker build -t kcm-rs:dev .
# Rules checked by cmd/kcm-rs/tests/dockerfile.rs: versioned base images, a final stage FROM scratch
# (no shell, no package manager), a numeric non-root USER, an exec-form ENTRYPOINT.
FROM docker.io/library/rust:1.95.0-bookworm AS build
WORKDIR /src
COPY . .
# The binary, exactly the shared libraries it loads, a passwd entry for uid 65532 and the CA bundle.
RUN cargo build --locked --profile image -p kcm-rs \
 && mkdir -p /rootfs/usr/local/bin /rootfs/etc/ssl/certs /rootfs/tmp \
 && cp target/image/kcm-rs /rootfs/usr/local/bin/kcm-rs \
 && ldd target/image/kcm-rs | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' \
    | while read -r lib; do install -D -m 0755 "$(readlink -f "$lib")" "/rootfs$lib"; done \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >/rootfs/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' >/rootfs/etc/group \
 && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
 && chmod 1777 /rootfs/tmp

FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
EXPOSE 10257
ENTRYPOINT ["/usr/local/bin/kcm-rs"]
