// The small programs inside the real node's test images (infra/images/build.sh): the pod sandbox's pause
// process and a test "model server". Standard library only, so they build without the module proxy.
module ripple.local/images

go 1.24.0
