# DNS-SD browse with python3-zeroconf (an independent mDNS implementation).
# browse.py SECONDS: prints one line per NVMe discovery service found within
# the seconds given. browse.py SECONDS watch: prints ADDED/REMOVED lines as
# the browser sees services come and go (a goodbye is a removal).
import sys
import time

from zeroconf import IPVersion, ServiceBrowser, ServiceListener, Zeroconf

found = {}
watch = len(sys.argv) > 2 and sys.argv[2] == "watch"


class Listener(ServiceListener):
    def add_service(self, zc, type_, name):
        if watch:
            print("ADDED", name, flush=True)
            return
        found[name] = zc.get_service_info(type_, name, timeout=3000)

    def update_service(self, zc, type_, name):
        if not watch:
            found[name] = zc.get_service_info(type_, name, timeout=3000)

    def remove_service(self, zc, type_, name):
        if watch:
            print("REMOVED", name, flush=True)
        found.pop(name, None)


zc = Zeroconf(ip_version=IPVersion.V4Only)
ServiceBrowser(zc, "_nvme-disc._tcp.local.", Listener())
time.sleep(float(sys.argv[1]))
for name, info in sorted(found.items()):
    if info is None:
        print("UNRESOLVED", name)
        continue
    txt = ";".join(f"{k.decode()}={(v or b'').decode()}" for k, v in sorted(info.properties.items()))
    print("FOUND", name, info.port, ",".join(sorted(info.parsed_addresses())), txt)
zc.close()
