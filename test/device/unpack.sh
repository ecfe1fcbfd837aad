# Sourced by the device scripts on the GPU machine, from the project's root: unpacks
# .device/root.tar.xz (test/device/pack.sh) under /opt/silvan-pg once a machine, and the models
# under /opt/silvan-pg/models; exports LD_LIBRARY_PATH and SILVAN_MODELS.
_root=/opt/silvan-pg
if [ ! -x $_root/usr/lib/postgresql/15/bin/postgres ]; then
	mkdir -p $_root && tar -C $_root -xJf .device/root.tar.xz
fi
if [ ! -d $_root/models ]; then
	mkdir -p $_root/models && tar -C $_root/models -xJf .device/models.tar.xz
fi
export LD_LIBRARY_PATH=$_root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export SILVAN_MODELS=$_root/models
