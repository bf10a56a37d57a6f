# SPDX-License-Identifier: Apache-2.0
# Sourced inside the VM: a veth pair and a soft-RoCE device rxe0 on veth0 (10.9.0.1), the
# device the verbs tests use. Fails (exit 1) with the reason when the kernel refuses.
modprobe crc32_generic && modprobe ib_uverbs && modprobe rdma_rxe && modprobe veth ||
    { echo "rxe_setup: cannot load the soft-RoCE modules"; exit 1; }
ip link set lo up
ip link add veth0 type veth peer name veth1
ip addr add 10.9.0.1/24 dev veth0
ip link set veth0 up
ip link set veth1 up
rdma link add rxe0 type rxe netdev veth0 || { echo "rxe_setup: rdma link add failed"; dmesg | tail -n 5; exit 1; }
for _ in $(seq 1 50); do
    ibv_devinfo -d rxe0 2>/dev/null | grep -q PORT_ACTIVE && return 0
    sleep 0.2
done
echo "rxe_setup: rxe0 did not become active"
exit 1
