"""ament_python / pip package of the live view node (Foxglove WebSocket server)."""
from setuptools import find_packages, setup

PACKAGE = "tensegrity_live"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
    ],
    python_requires=">=3.10",
    install_requires=["numpy>=1.24", "foxglove-sdk>=0.30", "tensegrity_engine", "tensegrity_ros_common"],
    zip_safe=False,
    maintainer="tensegrity-ros maintainers",
    maintainer_email="maintainers@tensegrity-ros.invalid",
    description="Live view of the tensegrity suite in the Foxglove app (Foxglove WebSocket server)",
    license="Apache-2.0",
    extras_require={"test": ["pytest", "websockets", "protobuf"]},
    entry_points={"console_scripts": ["live_view_node = tensegrity_live.live_view_node:main"]},
)
